// The tasks page's groups, kept in order as tasks change one at a time:
// a change moves one task (a binary search and a splice), instead of
// every loaded task being grouped and sorted again, so a change costs the
// same at 100 loaded tasks as at 10,000.

import type { Task } from '../backend/contract';
import { Group } from './language';
import { groupOf, type Groups } from './model';
import { timeOf } from './time';

/**
 * Where t sorts in its group, ascending (ties by id): questions oldest
 * first, work by when it started, the queue first come first served, and
 * finished newest first (by when they ended).
 */
export function placeOf(t: Task): { group: Group; key: number } {
  const group = groupOf(t.status);
  switch (group) {
    case Group.NeedsYou:
      return { group, key: timeOf(t.ask?.askedAt ?? t.createdAt) };
    case Group.Working:
      return { group, key: timeOf(t.startedAt ?? t.createdAt) };
    case Group.Waiting:
      return { group, key: timeOf(t.createdAt) };
    default:
      return { group, key: -timeOf(t.endedAt ?? t.createdAt) };
  }
}

/** Orders two places in a group (placeOf's key, then the id): negative when a comes first. */
export function comparePlaces(aKey: number, aId: string, bKey: number, bId: string): number {
  return aKey - bKey || (aId < bId ? -1 : aId > bId ? 1 : 0);
}

/** Reports whether a and b hold the same tasks in the same order (a view shown a is shown b). */
export function sameTasks(a: readonly Task[], b: readonly Task[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

/** One group's tasks in order, with each one's key beside it. */
interface Column {
  tasks: Task[];
  keys: number[];
}

const groups = [Group.NeedsYou, Group.Working, Group.Waiting, Group.Finished] as const;

/**
 * OrderedGroups holds every task in its group's order. put and remove
 * change one task; snapshot answers the groups as arrays that stay the
 * same objects while their group does not change (a view that shows one
 * group is not redrawn for a change to another).
 */
export class OrderedGroups {
  readonly #columns: Record<Group, Column> = {
    [Group.NeedsYou]: { tasks: [], keys: [] },
    [Group.Working]: { tasks: [], keys: [] },
    [Group.Waiting]: { tasks: [], keys: [] },
    [Group.Finished]: { tasks: [], keys: [] },
  };
  /** Where each task is: its group and key. */
  readonly #at = new Map<string, { group: Group; key: number }>();
  /** How many finished tasks came from each chat (by its id), and the copy last given out. */
  readonly #parents = new Map<string, number>();
  #parentsOut: ReadonlyMap<string, number> = new Map();
  #parentsChanged = false;
  /** The groups changed since the last snapshot. */
  readonly #dirty = new Set<Group>(groups);
  #snapshot: Groups = { [Group.NeedsYou]: [], [Group.Working]: [], [Group.Waiting]: [], [Group.Finished]: [] };

  /** How many tasks it holds. */
  get size(): number {
    return this.#at.size;
  }

  /** Adds t, or moves it to where its new copy sorts. */
  put(t: Task): void {
    this.remove(t.id);
    const place = placeOf(t);
    const c = this.#columns[place.group];
    const i = lowerBound(c, place.key, t.id);
    c.tasks.splice(i, 0, t);
    c.keys.splice(i, 0, place.key);
    this.#at.set(t.id, place);
    this.#dirty.add(place.group);
    if (place.group === Group.Finished) this.#countParent(t.parentConversationId, 1);
  }

  #countParent(id: string, by: number): void {
    if (id === '') return;
    const n = (this.#parents.get(id) ?? 0) + by;
    if (n > 0) this.#parents.set(id, n);
    else this.#parents.delete(id);
    this.#parentsChanged = true;
  }

  /** Takes the task with this id out; nothing when it holds none. */
  remove(id: string): void {
    const place = this.#at.get(id);
    if (!place) return;
    const c = this.#columns[place.group];
    const i = lowerBound(c, place.key, id);
    const t = c.tasks[i];
    if (t?.id !== id) throw new Error(`ordered groups: task ${id} is not where its key says`);
    if (place.group === Group.Finished) this.#countParent(t.parentConversationId, -1);
    c.tasks.splice(i, 1);
    c.keys.splice(i, 1);
    this.#at.delete(id);
    this.#dirty.add(place.group);
  }

  /** Forgets every task. */
  clear(): void {
    for (const g of groups) this.#columns[g] = { tasks: [], keys: [] };
    this.#at.clear();
    for (const g of groups) this.#dirty.add(g);
    this.#parents.clear();
    this.#parentsChanged = true;
  }

  /**
   * The chats the finished tasks came from, each with how many: the same
   * map while that does not change (a task from no chat changes nothing).
   */
  finishedParents(): ReadonlyMap<string, number> {
    if (this.#parentsChanged) {
      this.#parentsOut = new Map(this.#parents);
      this.#parentsChanged = false;
    }
    return this.#parentsOut;
  }

  /** The groups now: a group that did not change since the last snapshot is the same array. */
  snapshot(): Groups {
    if (this.#dirty.size === 0) return this.#snapshot;
    const next = { ...this.#snapshot };
    for (const g of this.#dirty) next[g] = this.#columns[g].tasks.slice();
    this.#dirty.clear();
    this.#snapshot = next;
    return next;
  }
}

/** The first index of c whose (key, id) is not below (key, id). */
function lowerBound(c: Column, key: number, id: string): number {
  let lo = 0;
  let hi = c.keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (comparePlaces(c.keys[mid] as number, (c.tasks[mid] as Task).id, key, id) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * How many of list's first tasks pass inside, for a list in which every
 * task that passes comes before every one that does not (a finished list,
 * newest first, and "ended at or after"): a binary search, so inside is
 * asked about a few tasks, not each one.
 */
export function prefixLength(list: readonly Task[], inside: (t: Task) => boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (inside(list[mid] as Task)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
