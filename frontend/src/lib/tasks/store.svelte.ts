// The plain Sets and Maps here are bookkeeping that no view reads.
/* eslint-disable svelte/prefer-svelte-reactivity */
import { SvelteMap, SvelteSet } from 'svelte/reactivity';
import type { Backend } from '../backend/backend';
import { EventType, Kind, isActive, isFinished, statuses, type CreateTaskRequest, type Fetched, type Slots, type Status, type Task, type TaskEvent, type TaskList, type TaskQuery } from '../backend/contract';
import { ApiError, toApiError } from '../backend/error';
import { Group } from './language';
import { applyEvent, badgeOf, queuePositions, type Badge, type Groups } from './model';
import { OrderedGroups, comparePlaces, placeOf, prefixLength, sameTasks } from './ordered';
import { OutputTail } from './output.svelte';
import { PageOrder, TaskPages, orderKey } from './pages.svelte';
import { browserFrames, floodScheduler, type Scheduler } from './schedule';
import { afterFailure, idle, tidy, type Removal } from './worktree';

/** An action sent to the server whose answer has not come back yet. */
export const Pending = {
  Stop: 'stop',
  Retry: 'retry',
  Resume: 'resume',
  Delete: 'delete',
  Allow: 'allow',
  Deny: 'deny',
} as const;
export type Pending = (typeof Pending)[keyof typeof Pending];

/** What an answer that came too late says: someone (a notification, another window) answered first. */
export const alreadyAnswered = 'Already answered.';

/** Told of every change a live event brought: the copy before (if any) and after. */
export type ChangeListener = (before: Task | undefined, after: Task) => void;

/** A change to one task, as an event brings it: the task's new copy, or its deletion. */
export type TaskChange = Extract<TaskEvent, { type: typeof EventType.TaskChanged | typeof EventType.TaskDeleted }>;

/** How many output tails are kept; the least recently shown are dropped first. */
const maxTails = 64;

/** The most pages of finished tasks a reload brings back. */
const reloadPages = 20;

/** When the finished task of tasks that ended the longest ago ended (+Infinity with none). */
function lowestEnded(tasks: readonly Task[]): number {
  let low = Number.POSITIVE_INFINITY;
  for (const t of tasks) if (isFinished(t.status)) low = Math.min(low, orderKey(t, PageOrder.Ended));
  return low;
}

/**
 * The store's tasks by id, which keeps them in their groups' order as they
 * are set and deleted (every change goes through here), and says when it
 * did (changed).
 */
class TaskMap extends SvelteMap<string, Task> {
  readonly order = new OrderedGroups();
  /** Bumped by every change to the order. */
  changed = $state(0);

  override set(id: string, t: Task): this {
    super.set(id, t);
    this.order.put(t);
    this.changed++;
    return this;
  }

  override delete(id: string): boolean {
    const had = super.delete(id);
    if (had) {
      this.order.remove(id);
      this.changed++;
    }
    return had;
  }

  override clear(): void {
    super.clear();
    this.order.clear();
    this.changed++;
  }
}

/**
 * TasksStore holds one copy of every task it has seen, the newest by rev,
 * kept current by live events (applied together at the next frame, at most
 * every floodGapMs under a flood; see floodScheduler) and reloaded whenever
 * the event stream reconnects: every task that is not finished, and the
 * finished ones page by page as the person scrolls (finished, a TaskPages).
 * How many tasks there are in each status (counts) comes with every list and
 * is kept exact by the status each event says a task had before, loaded or
 * not. Actions are optimistic: the task is marked pending at once and the
 * server's answer reconciles it.
 */
export class TasksStore {
  /** Every task by id. */
  readonly byId = new TaskMap();
  /** Actions in flight, by task id. */
  readonly pending = new SvelteMap<string, Pending>();
  /** The last action's error for a task, in one sentence. */
  readonly errors = new SvelteMap<string, string>();
  /**
   * Tasks sent from this window. A quick one may finish before the answer to
   * its creation arrives, so this, not having seen it working, says the
   * person is waiting for it.
   */
  readonly sent = new SvelteSet<string>();

  /** True once the first list arrived. */
  loaded = $state(false);
  /** True when the server wants a sign-in. */
  unauthorized = $state(false);
  /** One sentence when the list could not be loaded. */
  loadError = $state('');
  /** Slot counts from the last list. */
  concurrent = $state<TaskList['concurrent'] | null>(null);
  /** How many tasks there are in each status, loaded or not: the last list's, kept current by events. */
  counts: Partial<Record<Status, number>> = $state({});
  /** The finished group's pages: the overview brings the first, loadMore the rest. */
  readonly finished: TaskPages;

  /** The page's groups; tasks being deleted are already hidden. */
  readonly groups: Groups = $derived.by(() => {
    void this.byId.changed;
    const g = this.byId.order.snapshot();
    const deleting = new Set<string>();
    for (const [id, p] of this.pending) if (p === Pending.Delete) deleting.add(id);
    if (deleting.size === 0) return g;
    const keep = (list: Task[]): Task[] => (list.some((t) => deleting.has(t.id)) ? list.filter((t) => !deleting.has(t.id)) : list);
    return { [Group.NeedsYou]: keep(g[Group.NeedsYou]), [Group.Working]: keep(g[Group.Working]), [Group.Waiting]: keep(g[Group.Waiting]), [Group.Finished]: keep(g[Group.Finished]) };
  });
  /** The chats the loaded finished tasks came from, each with how many (the same map while that does not change). */
  readonly finishedChats: ReadonlyMap<string, number> = $derived.by(() => {
    void this.byId.changed;
    return this.byId.order.finishedParents();
  });
  /** Place in line of each queued task. */
  readonly positions: Map<string, number> = $derived(queuePositions(this.groups[Group.Waiting]));
  /** The sidebar badge (the tasks' questions alone; the sidebar adds the chats'). */
  readonly badge: Badge | null = $derived(badgeOf(this.counts));
  /** Background slots: how many hold one now (from the live list) and the limit (from the last load). */
  readonly backgroundSlots: Slots | null = $derived.by(() => {
    const limit = this.concurrent?.background.limit;
    if (limit === undefined) return null;
    let running = 0;
    for (const g of [Group.NeedsYou, Group.Working]) for (const t of this.groups[g]) if (t.kind === Kind.Background && isActive(t.status)) running++;
    return { running, limit };
  });
  /** How many tasks there are, loaded or not. */
  readonly count: number = $derived(statuses.reduce((n, s) => n + (this.counts[s] ?? 0), 0));
  /** How many finished tasks there are, loaded or not. */
  readonly finishedCount: number = $derived(statuses.reduce((n, s) => n + (isFinished(s) ? (this.counts[s] ?? 0) : 0), 0));
  /** Finished tasks shown though the pages have not reached them: the ones opened from elsewhere. */
  readonly pinned = new SvelteSet<string>();
  /**
   * The finished tasks the pages reached, newest first, with the ones shown
   * on purpose (the palette, a notification) wherever they fall.
   */
  readonly finishedShown: Task[] = $derived.by(() => {
    const list = this.groups[Group.Finished];
    // The group is in the pages' order, so the tasks they reached are its
    // first ones; the pinned ones below them follow, in the same order.
    const reached = prefixLength(list, (t) => this.finished.reaches(t));
    const below: { t: Task; key: number }[] = [];
    for (const id of this.pinned) {
      const t = this.byId.get(id);
      if (!t || this.finished.reaches(t)) continue;
      const p = placeOf(t);
      if (p.group === Group.Finished && this.pending.get(id) !== Pending.Delete) below.push({ t, key: p.key });
    }
    below.sort((a, b) => comparePlaces(a.key, a.t.id, b.key, b.t.id));
    const shown = below.length === 0 ? (reached === list.length ? list : list.slice(0, reached)) : [...list.slice(0, reached), ...below.map((x) => x.t)];
    const last = this.#lastShown;
    if (sameTasks(shown, last)) return last;
    this.#lastShown = shown;
    return shown;
  });
  /** What finishedShown answered last: a list equal to it is answered as the same array, so what shows it is not redrawn. */
  #lastShown: Task[] = [];

  readonly #backend: Backend;
  readonly #schedule: Scheduler;
  readonly #gone = new Set<string>();
  readonly #tails = new Map<string, OutputTail>();
  #queue: TaskChange[] = [];
  #scheduled = false;
  #reloads = 0;
  #touched = new Set<string>();
  readonly #listeners = new Set<ChangeListener>();

  readonly #searches = new Set<TaskPages>();
  /** Tasks and chats' tasks asked for since the last reload. */
  readonly #asked = new Set<string>();

  constructor(backend: Backend, schedule: Scheduler = floodScheduler(browserFrames)) {
    this.#backend = backend;
    this.#schedule = schedule;
    this.finished = new TaskPages(this.#pageSource(), { group: 'finished' });
  }

  #pageSource() {
    return {
      list: (q: TaskQuery) => this.#backend.listTasks(q),
      take: (l: TaskList) => {
        // Counts stay the events' to keep: a page's may be a moment older
        // than the events already applied.
        this.flush();
        for (const t of l.tasks) this.#put(t);
      },
    };
  }

  /** Loads the next page of finished tasks. */
  loadMore(): Promise<void> {
    return this.finished.loadMore();
  }

  /**
   * Starts a paged list of its own (a search, a chat's tasks): its tasks join
   * the store's, and a reload starts it again. Close it when the view goes.
   */
  search(query: TaskQuery, order: PageOrder = PageOrder.Ended): TaskPages & { dispose: () => void } {
    const p = new TaskPages(this.#pageSource(), query, order);
    this.#searches.add(p);
    void p.loadMore();
    return Object.assign(p, {
      dispose: () => {
        p.close();
        this.#searches.delete(p);
      },
    });
  }

  /** Asks the server for up to limit finished tasks whose titles hold every word of q, newest first; they join the store's. */
  async findFinished(q: string, limit = 20): Promise<Task[]> {
    const l = await this.#backend.listTasks({ group: 'finished', q, limit });
    for (const t of l.tasks) this.#put(t);
    return l.tasks.map((t) => this.byId.get(t.id) ?? t);
  }

  /**
   * Fetches a task the store does not hold (an old one a chat shows), once
   * until the next reload; it joins the store's, not the finished list.
   */
  async ensure(id: string): Promise<void> {
    if (id === '' || this.byId.has(id) || this.#gone.has(id) || this.#asked.has(id)) return;
    this.#asked.add(id);
    try {
      this.#put(await this.#backend.getTask(id));
    } catch {
      // A task that is gone, or a server that is away: the chat shows what it has.
    }
  }

  /** Loads the tasks chat id sent (its cards), once until the next reload: most are finished and not loaded. */
  async loadSentBy(id: string, limit = 500): Promise<void> {
    if (id === '' || this.#asked.has(`chat:${id}`)) return;
    this.#asked.add(`chat:${id}`);
    try {
      const l = await this.#backend.listTasks({ conversation: id, limit });
      for (const t of l.tasks) this.#put(t);
    } catch {
      this.#asked.delete(`chat:${id}`);
    }
  }

  #setCounts(c: Record<string, number> | undefined): void {
    if (!c) return;
    const next: Partial<Record<Status, number>> = {};
    for (const s of statuses) if ((c[s] ?? 0) > 0) next[s] = c[s];
    this.counts = next;
  }

  /** Moves one task in counts: out of from (if it was anywhere), into to (if it still is). */
  #recount(from: Status | undefined, to: Status | undefined): void {
    if (from === to) return;
    if (from) this.counts[from] = Math.max(0, (this.counts[from] ?? 0) - 1);
    if (to) this.counts[to] = (this.counts[to] ?? 0) + 1;
  }

  /** Queues an event to be applied with the others of this frame. */
  enqueue(e: TaskChange): void {
    this.#queue.push(e);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#schedule(() => this.flush());
  }

  /** Applies every queued event now. */
  flush(): void {
    this.#scheduled = false;
    const q = this.#queue;
    this.#queue = [];
    for (const e of q) this.#apply(e, true);
  }

  /**
   * Calls f with every change that a live event brings (never for the list a
   * load or an action's answer brings). Returns the function that stops it.
   */
  onChange(f: ChangeListener): () => void {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  /**
   * Keeps a task about to be shown (a click on its notification, the
   * palette) listed: a finished one the pages have not reached stays among
   * the finished tasks, where it falls.
   */
  pin(id: string): void {
    const t = this.byId.get(id);
    if (t && isFinished(t.status) && !this.finished.reaches(t)) this.pinned.add(id);
  }

  #apply(e: TaskChange, live = false): void {
    const id = e.type === EventType.TaskDeleted ? e.id : e.task.id;
    if (this.#reloads > 0) this.#touched.add(id);
    const before = this.byId.get(id);
    if (live) {
      // Every event the server sends is one change, whatever this window
      // holds: prev says where the task was ("" or absent: nowhere yet).
      // (One older than the copy held came late: its change is counted.)
      if (e.type === EventType.TaskDeleted) this.#recount(e.prev ?? before?.status, undefined);
      else if (!before || e.task.rev >= before.rev) this.#recount(e.prev, e.task.status);
    }
    const changed = applyEvent(this.byId, this.#gone, e);
    if (live && changed && e.type === EventType.TaskChanged) {
      for (const f of this.#listeners) {
        try {
          f(before, e.task);
        } catch (err) {
          console.error(err);
        }
      }
    }
    if (e.type === EventType.TaskDeleted) {
      this.pending.delete(id);
      this.errors.delete(id);
      this.#tails.delete(id);
      this.pinned.delete(id);
    }
  }

  #put(t: Task): void {
    this.#apply({ type: EventType.TaskChanged, task: t });
  }

  /**
   * Loads the overview: every task not finished and the finished ones as
   * far down as the pages had reached (at most reloadPages pages), so a
   * reconnect leaves the person where they were. Tasks missing from it were
   * deleted while we were not listening, or sit on a later page (which
   * scrolling loads again), unless an event about them arrived during the
   * load. Searches start again.
   */
  async reload(): Promise<void> {
    this.#reloads++;
    try {
      const reached = this.finished.started ? this.finished.boundary : Number.POSITIVE_INFINITY;
      const list = await this.#backend.listTasks();
      const tasks = [...list.tasks];
      let next = list.next;
      for (let pages = 1; next !== '' && pages < reloadPages && lowestEnded(tasks) > reached; pages++) {
        const page = await this.#backend.listTasks({ group: 'finished', cursor: next });
        tasks.push(...page.tasks);
        next = page.next;
      }
      this.flush();
      const ids = new Set(tasks.map((t) => t.id));
      for (const id of [...this.byId.keys()]) {
        if (!ids.has(id) && !this.#touched.has(id) && !this.pinned.has(id)) this.byId.delete(id);
      }
      for (const t of tasks) this.#put(t);
      this.finished.took(
        tasks.filter((t) => isFinished(t.status)),
        next,
        true,
      );
      this.#setCounts(list.counts);
      for (const p of this.#searches) void p.restart();
      this.#asked.clear();
      this.concurrent = list.concurrent;
      this.loaded = true;
      this.unauthorized = false;
      this.loadError = '';
    } catch (e) {
      const err = toApiError(e);
      if (err.unauthorized) this.unauthorized = true;
      else this.loadError = err.message;
    } finally {
      if (--this.#reloads === 0) this.#touched.clear();
    }
  }

  /** The output tail of a task, kept across re-renders. */
  /** A running task's log grew to n (task.output): its shown tail reads it now. */
  grew(id: string, n: number): void {
    this.#tails.get(id)?.grew(n);
  }

  tail(id: string): OutputTail {
    let t = this.#tails.get(id);
    if (t) {
      this.#tails.delete(id);
    } else {
      t = new OutputTail(this.#backend, id);
      if (this.#tails.size >= maxTails) {
        const oldest = this.#tails.keys().next().value;
        if (oldest !== undefined) this.#tails.delete(oldest);
      }
    }
    this.#tails.set(id, t);
    return t;
  }

  /** Starts a task; rejects with an ApiError the composer shows. */
  async create(req: CreateTaskRequest): Promise<Task> {
    try {
      const t = await this.#backend.createTask(req);
      this.sent.add(t.id);
      this.#put(t);
      return t;
    } catch (e) {
      const err = toApiError(e);
      if (err.unauthorized) this.unauthorized = true;
      throw err;
    }
  }

  stop(id: string): Promise<void> {
    return this.#act(id, Pending.Stop, () => this.#backend.stopTask(id));
  }

  retry(id: string): Promise<void> {
    return this.#act(id, Pending.Retry, () => this.#backend.retryTask(id));
  }

  /** Carries a chat task on from where it stopped, with its whole transcript. */
  resume(id: string): Promise<void> {
    return this.#act(id, Pending.Resume, () => this.#backend.resumeTask(id));
  }

  remove(id: string): Promise<void> {
    return this.#act(id, Pending.Delete, async () => {
      await this.#backend.deleteTask(id);
      this.#apply({ type: EventType.TaskDeleted, id });
      return null;
    });
  }

  /** Answers the task's pending question, if it still has one. */
  answer(id: string, allow: boolean): Promise<void> {
    const askId = this.byId.get(id)?.ask?.id;
    if (askId === undefined) {
      this.errors.set(id, 'There is no question to answer any more.');
      return Promise.resolve();
    }
    return this.#act(id, allow ? Pending.Allow : Pending.Deny, () => this.#backend.answerTask(id, askId, allow));
  }

  /**
   * Removes a finished helper's kept worktree (confirm: even when it holds
   * work) and says where the removal stands: idle once it is gone (the task
   * is updated at once), confirm when it holds work, error otherwise.
   */
  async removeWorktree(id: string, confirm: boolean): Promise<Removal> {
    try {
      this.#put(await this.#backend.removeWorktree(id, confirm));
      return idle;
    } catch (e) {
      const err = toApiError(e);
      if (err.unauthorized) this.unauthorized = true;
      return afterFailure(err, confirm);
    }
  }

  /**
   * Brings a helper's branch from its host into the clone here: what was
   * fetched, or why nothing was (the server's words, tidied).
   */
  async fetchBranch(id: string): Promise<{ fetched: Fetched } | { error: string }> {
    try {
      const f = await this.#backend.fetchTask(id);
      this.#put(f.task);
      return { fetched: f };
    } catch (e) {
      const err = toApiError(e);
      if (err.unauthorized) this.unauthorized = true;
      return { error: tidy(err.message) };
    }
  }

  /** Shows the task's folder in the file manager; a failure shows on its card. */
  async openFolder(id: string): Promise<void> {
    try {
      await this.#backend.openFolder(id);
    } catch (e) {
      const err = toApiError(e);
      if (err.unauthorized) this.unauthorized = true;
      this.errors.set(id, err.message);
    }
  }

  /** Clears the error shown for a task. */
  dismiss(id: string): void {
    this.errors.delete(id);
  }

  async #act(id: string, kind: Pending, call: () => Promise<Task | null>): Promise<void> {
    if (this.pending.has(id)) return;
    this.pending.set(id, kind);
    this.errors.delete(id);
    try {
      const t = await call();
      if (t) this.#put(t);
    } catch (e) {
      const err = toApiError(e);
      if (err.unauthorized) this.unauthorized = true;
      const late = err.status === 409 && (kind === Pending.Allow || kind === Pending.Deny);
      this.errors.set(id, late ? alreadyAnswered : sentence(err));
      // Whatever we thought, the server knows: fetch its copy.
      try {
        this.#put(await this.#backend.getTask(id));
      } catch (e2) {
        if (e2 instanceof ApiError && e2.status === 404) this.#apply({ type: EventType.TaskDeleted, id });
      }
    } finally {
      this.pending.delete(id);
    }
  }
}

/** An error as one sentence ending in a full stop. */
export function sentence(e: ApiError): string {
  const m = e.message.trim();
  if (m === '') return 'Something went wrong; try again.';
  const s = m.charAt(0).toUpperCase() + m.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}
