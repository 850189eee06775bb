// Finished tasks come from the server a page at a time, newest first. The
// pages of one list (the finished group, a search, a chat's tasks) are
// tracked here: the cursor of the next page and how far down they reached.
// The tasks themselves live in the store, with every other copy, so a task
// that a live event moves is never held twice.

import type { Task, TaskList, TaskQuery } from '../backend/contract';
import { toApiError } from '../backend/error';
import { timeOf } from './time';

/** How a list is ordered on the server: by when its tasks ended (a group), or were created (a chat's). */
export const PageOrder = { Ended: 'ended', Created: 'created' } as const;
export type PageOrder = (typeof PageOrder)[keyof typeof PageOrder];

/** Where t sorts in a list of that order, the larger the newer. */
export function orderKey(t: Task, order: PageOrder): number {
  return timeOf(order === PageOrder.Ended ? (t.endedAt ?? t.createdAt) : t.createdAt);
}

/** What a list's pages are read through: the server's list, and the store that keeps the tasks. */
export interface PageSource {
  list(q: TaskQuery): Promise<TaskList>;
  /** Keeps the tasks of a page that arrived (and the counts that came with it). */
  take(l: TaskList): void;
}

/**
 * TaskPages follows one paged list. Every task of the list at or above its
 * boundary (the last page's oldest) has been loaded, so a view shows the
 * store's tasks that pass reaches(); a task that a live event brings from
 * further down waits until the pages get there.
 */
export class TaskPages {
  /** The cursor of the next page; '' when there is none (or none asked yet). */
  next = $state('');
  /** The order key of the oldest task the pages reached: +Infinity before the first page, -Infinity at the end. */
  boundary = $state(Number.POSITIVE_INFINITY);
  /** True while a page is on its way. */
  loading = $state(false);
  /** Why the last page could not be loaded, in one sentence; '' when it could. */
  error = $state('');
  /** True once a first page arrived. */
  started = $state(false);

  readonly query: TaskQuery;
  readonly order: PageOrder;
  readonly #source: PageSource;
  #gen = 0;

  constructor(source: PageSource, query: TaskQuery, order: PageOrder = PageOrder.Ended) {
    this.#source = source;
    this.query = query;
    this.order = order;
  }

  /** True when there are pages still to load. */
  get more(): boolean {
    return !this.started || this.next !== '';
  }

  /** Reports whether the pages loaded so far cover t's place in the list. */
  reaches(t: Task): boolean {
    return orderKey(t, this.order) >= this.boundary;
  }

  /** Takes a page that arrived some other way (the overview's first finished page): tasks in the list's order. */
  took(tasks: readonly Task[], next: string, reset = false): void {
    if (reset) {
      this.#gen++;
      this.loading = false;
      this.error = '';
      this.boundary = Number.POSITIVE_INFINITY;
    }
    this.next = next;
    this.started = true;
    if (next === '') {
      this.boundary = Number.NEGATIVE_INFINITY;
      return;
    }
    let low = this.boundary;
    for (const t of tasks) low = Math.min(low, orderKey(t, this.order));
    this.boundary = low;
  }

  /** Forgets the pages and loads the first one again. */
  restart(): Promise<void> {
    this.#gen++;
    this.started = false;
    this.next = '';
    this.boundary = Number.POSITIVE_INFINITY;
    this.loading = false;
    this.error = '';
    return this.loadMore();
  }

  /** Loads the next page, unless one is on its way or there is none. */
  async loadMore(): Promise<void> {
    if (this.loading || !this.more) return;
    const gen = this.#gen;
    this.loading = true;
    this.error = '';
    try {
      const l = await this.#source.list(this.started ? { ...this.query, cursor: this.next } : { ...this.query });
      if (gen !== this.#gen) return;
      this.#source.take(l);
      this.took(l.tasks, l.next);
    } catch (e) {
      if (gen !== this.#gen) return;
      this.error = errorSentence(toApiError(e).message);
    } finally {
      if (gen === this.#gen) this.loading = false;
    }
  }

  /** Stops any page on its way from landing (the view that asked is gone). */
  close(): void {
    this.#gen++;
    this.loading = false;
  }
}

function errorSentence(m: string): string {
  const s = m.trim();
  if (s === '') return 'The next tasks could not be loaded.';
  const c = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(c) ? c : `${c}.`;
}
