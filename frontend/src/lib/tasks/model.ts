// Pure rules of the task list: which copy wins, how tasks are grouped and
// counted. The store wraps these in runes; the tests exercise them directly.

import { EventType, Status, type Kind, type Task, type TaskEvent } from '../backend/contract';
import { Group } from './language';
import { timeOf } from './time';

/** Reports whether incoming should replace current: only a strictly higher rev does. */
export function isNewer(current: Task | undefined, incoming: Task): boolean {
  return current === undefined || incoming.rev > current.rev;
}

/**
 * Applies one event to tasks (keyed by id) and reports whether anything
 * changed. Older or equal revs are ignored; deleted ids are remembered in
 * gone so a late copy cannot bring them back.
 */
export function applyEvent(tasks: Map<string, Task>, gone: Set<string>, e: TaskEvent): boolean {
  if (e.type === EventType.Open || e.type === EventType.OpenChat || e.type === EventType.Compose) return false;
  if (e.type === EventType.TaskDeleted) {
    gone.add(e.id);
    return tasks.delete(e.id);
  }
  const t = e.task;
  if (gone.has(t.id) || !isNewer(tasks.get(t.id), t)) return false;
  tasks.set(t.id, t);
  return true;
}

/** The tasks page's lists, each already in display order. */
export interface Groups {
  [Group.NeedsYou]: Task[];
  [Group.Working]: Task[];
  [Group.Waiting]: Task[];
  [Group.Finished]: Task[];
}

/** The group a task belongs to. */
export function groupOf(s: Status): Group {
  switch (s) {
    case Status.NeedsYou:
      return Group.NeedsYou;
    case Status.Running:
      return Group.Working;
    case Status.Queued:
      return Group.Waiting;
    default:
      return Group.Finished;
  }
}

const byTime =
  (at: (t: Task) => number, dir: 1 | -1) =>
  (a: Task, b: Task): number =>
    dir * (at(a) - at(b));

/**
 * The place in line of every queued task (1 = next to start). Background
 * tasks and helpers have separate slots, so each kind has its own line.
 */
export function queuePositions(tasks: Iterable<Task>): Map<string, number> {
  const lines = new Map<Kind, Task[]>();
  for (const t of tasks) {
    if (t.status !== Status.Queued) continue;
    const line = lines.get(t.kind);
    if (line) line.push(t);
    else lines.set(t.kind, [t]);
  }
  const pos = new Map<string, number>();
  for (const line of lines.values()) {
    line.sort(byTime((t) => timeOf(t.createdAt), 1));
    line.forEach((t, i) => pos.set(t.id, i + 1));
  }
  return pos;
}

/** What the sidebar badge shows: how many need an OK (amber), else how many are working. */
export interface Badge {
  count: number;
  needsYou: boolean;
  /** Spoken text for screen readers: "2 need your OK". */
  label: string;
}

/**
 * The sidebar badge for these counts (how many tasks in each status, as the
 * server keeps them), or null when nothing needs you or works. needsYou is
 * the one "needs you" count (tasks' and chats' questions, as Approvals
 * counts them); left out, the tasks' alone.
 */
export function badgeOf(counts: Partial<Record<Status, number>>, needsYou?: number): Badge | null {
  const ask = needsYou ?? counts[Status.NeedsYou] ?? 0;
  if (ask > 0) return { count: ask, needsYou: true, label: ask === 1 ? '1 needs your OK' : `${ask} need your OK` };
  const working = counts[Status.Running] ?? 0;
  if (working > 0) return { count: working, needsYou: false, label: `${working} working` };
  return null;
}


/**
 * The chat that showing a task opens (a notification's click, the palette):
 * the chat it came from, else its own; '' for a task without a chat (a shell
 * command), which the tasks page shows.
 */
export function chatOfTask(t: Pick<Task, 'conversationId' | 'parentConversationId'>): string {
  return t.parentConversationId || t.conversationId || '';
}
