// Task cards in a chat's transcript: the pure rules. A task's status
// changes arrive as `task-event` messages; the transcript shows one card per
// task where its first event is, kept current from the live task record
// (or, once the task was deleted, from its newest event).

import { Kind, Status, isFinished, type Result, type Task, type TaskSnapshot } from '../backend/contract';
import { formatUSD } from '../money';
import { worktreeLine } from '../tasks/language';
import { isDeclined } from '../tasks/outcome';

/** One task's card: the task's events folded together. */
export interface TaskCardItem {
  kind: 'task';
  /** The first event's message id: the card stays where that was. */
  key: string;
  taskId: string;
  /** The newest non-final event. */
  event: TaskSnapshot;
  /** When the first event and the newest one were stored. */
  firstAt: string;
  lastAt: string;
  /** When an event first said the task was working, if one did. */
  startedAt: string | null;
}

/** The helpers of one delegate call, together at the place of the first one's first event. */
export interface TaskGroupItem {
  kind: 'task-group';
  key: string;
  groupId: string;
  /** In part order (helper 1 first). */
  cards: TaskCardItem[];
}

/** A finished background task's result, come back into the chat at its own place. */
export interface TaskResultItem {
  kind: 'task-result';
  key: string;
  taskId: string;
  event: TaskSnapshot;
  at: string;
}

/** What folding task events gives: cards and groups where the first event was, results where they are. */
export type TaskItem = TaskCardItem | TaskGroupItem | TaskResultItem;

/**
 * Folds task events in transcript order. It is called with each `task-event`
 * message and returns the item to add at that place, or null when the event
 * joined a card (or a group) that is already there.
 */
export class TaskFolder {
  readonly #cards = new Map<string, TaskCardItem>();
  readonly #groups = new Map<string, TaskGroupItem>();

  add(id: string, at: string, ev: TaskSnapshot): TaskItem | null {
    // An interrupted task has nothing to bring back: its card already says
    // so and offers Resume; a second "Interrupted" below it would show the
    // task twice. Its result comes back once it does finish.
    if (ev.final && !(ev.status === Status.Interrupted && this.#cards.has(ev.taskId))) return { kind: 'task-result', key: id, taskId: ev.taskId, event: ev, at };
    const working = ev.status !== Status.Queued;
    const have = this.#cards.get(ev.taskId);
    if (have) {
      have.event = ev;
      have.lastAt = at;
      if (working && have.startedAt === null) have.startedAt = at;
      return null;
    }
    const card: TaskCardItem = { kind: 'task', key: id, taskId: ev.taskId, event: ev, firstAt: at, lastAt: at, startedAt: working ? at : null };
    this.#cards.set(ev.taskId, card);
    const gid = ev.groupId ?? '';
    if (gid === '') return card;
    const group = this.#groups.get(gid);
    if (group) {
      group.cards.push(card);
      group.cards.sort((a, b) => (a.event.part ?? 0) - (b.event.part ?? 0));
      return null;
    }
    const g: TaskGroupItem = { kind: 'task-group', key: id, groupId: gid, cards: [card] };
    this.#groups.set(gid, g);
    return g;
  }
}

/** What a card shows, from the live task when there is one, else from the newest event. */
export interface CardView {
  taskId: string;
  kind: Kind;
  status: Status;
  title: string;
  /** What it is doing now ("Running npm test"); live only. */
  current: string;
  /** The last things it did, oldest first; live only. */
  steps: string[];
  by: string;
  note: string;
  error: string;
  summary: string;
  /** The worktree's branch, and what it holds ("3 changed · 2 commits ahead"; '' when unknown). */
  branch: string;
  work: string;
  /** The task's own chat ('' when not known). */
  conversationId: string;
  part: number;
  parts: number;
  startedAt: string | null;
  endedAt: string | null;
  result: Result | null;
  exitCode: number | null;
  /** True when this comes from the live record. */
  live: boolean;
}

/** The card of item: the live task wins; the newest event stands in for a deleted one. */
export function cardView(item: Pick<TaskCardItem, 'taskId' | 'event' | 'lastAt' | 'startedAt' | 'firstAt'>, live: Task | undefined): CardView {
  const ev = item.event;
  if (live) {
    const title = live.title.trim() !== '' ? live.title : live.text.trim() !== '' ? live.text : ev.title;
    return {
      taskId: live.id,
      kind: live.kind,
      status: live.status,
      title,
      current: live.current,
      steps: live.steps ?? [],
      by: live.by,
      note: live.note,
      error: live.error,
      summary: live.summary,
      branch: live.worktree?.branch ?? ev.branch ?? '',
      work: live.worktree ? worktreeLine(live.worktree) : '',
      conversationId: live.conversationId || ev.conversationId || '',
      part: live.part ?? ev.part ?? 0,
      parts: live.parts ?? ev.parts ?? 0,
      startedAt: live.startedAt,
      endedAt: live.endedAt,
      result: live.result,
      exitCode: live.exitCode,
      live: true,
    };
  }
  const started = item.startedAt ?? (ev.status !== Status.Queued ? item.firstAt : null);
  return {
    taskId: item.taskId,
    kind: ev.taskKind,
    status: ev.status,
    title: ev.title,
    current: '',
    steps: [],
    by: ev.by ?? '',
    note: ev.note ?? '',
    error: ev.error ?? '',
    summary: ev.summary ?? '',
    branch: ev.branch ?? '',
    work: '',
    conversationId: ev.conversationId ?? '',
    part: ev.part ?? 0,
    parts: ev.parts ?? 0,
    startedAt: started,
    endedAt: isFinished(ev.status) ? item.lastAt : null,
    result: null,
    exitCode: null,
    live: false,
  };
}

/** A task the tasks page shows, as a card: its record stands in for the events (the live record wins in cardView). */
export function itemOf(t: Task): TaskCardItem {
  return { kind: 'task', key: t.id, taskId: t.id, event: { taskId: t.id, taskKind: t.kind, status: t.status, title: t.title }, firstAt: t.createdAt, lastAt: t.endedAt ?? '', startedAt: t.startedAt };
}

/** How many of each status, as a group's header says it: "2 working · 1 done". */
export function groupTally(views: readonly (Pick<CardView, 'status'> & { error?: string })[]): string {
  const words: [Status, (n: number) => string][] = [
    [Status.NeedsYou, (n) => (n === 1 ? '1 needs your OK' : `${n} need your OK`)],
    [Status.Running, (n) => `${n} working`],
    [Status.Queued, (n) => `${n} waiting`],
    [Status.Done, (n) => `${n} done`],
    [Status.Failed, (n) => `${n} didn't finish`],
    [Status.Stopped, (n) => `${n} stopped`],
    [Status.Interrupted, (n) => `${n} interrupted`],
  ];
  // A helper the person said no to was declined, not a failure.
  const declined = (v: (typeof views)[number]): boolean => isDeclined({ status: v.status, error: v.error ?? '' });
  const parts: string[] = [];
  for (const [s, say] of words) {
    const n = views.filter((v) => v.status === s && !declined(v)).length;
    if (n > 0) parts.push(say(n));
    if (s === Status.Failed) {
      const d = views.filter(declined).length;
      if (d > 0) parts.push(`${d} declined`);
    }
  }
  return parts.join(' · ');
}

/**
 * What a group was guessed to cost before its helpers started, and its
 * job's cap: "about $0.03 to start · cap $1.50" ('' when neither is known).
 */
export function groupCost(tasks: readonly (Pick<Task, 'estimate' | 'cap'> | undefined)[]): string {
  let estimate = 0;
  let cap = 0;
  for (const t of tasks) {
    estimate += t?.estimate ?? 0;
    cap = Math.max(cap, t?.cap ?? 0);
  }
  const parts: string[] = [];
  if (estimate > 0) parts.push(`about ${formatUSD(estimate)} to start`);
  if (cap > 0) parts.push(`cap ${formatUSD(cap)}`);
  return parts.join(' · ');
}

/** A group's heading: "3 helpers". */
export function helpersLabel(n: number): string {
  return n === 1 ? '1 helper' : `${n} helpers`;
}

/**
 * The words before the parent chat's title in a task chat's banner:
 * "Background task from", "Helper 2 of 3 for".
 */
export function bannerLead(t: { kind: Kind; part?: number | undefined; parts?: number | undefined }): string {
  if (t.kind !== Kind.Helper) return 'Background task from';
  const part = t.part ?? 0;
  const parts = t.parts ?? 0;
  return part > 0 && parts > 0 ? `Helper ${part} of ${parts} for` : 'Helper for';
}

/** The whole banner as one sentence: "Helper 2 of 3 for Fix the build". */
export function bannerText(t: { kind: Kind; part?: number | undefined; parts?: number | undefined }, parentTitle: string): string {
  return `${bannerLead(t)} ${parentTitle}`;
}
