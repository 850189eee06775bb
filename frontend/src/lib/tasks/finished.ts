// The finished list's rules, pure so the list can later come from the
// server page by page: when each finished ("2h ago"), the day headings it
// falls under, and the filter (status, chat, text).

import { Status, type Task } from '../backend/contract';
import { isDeclined } from './outcome';
import { timeOf } from './time';

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;

/** How long ago at was, as a card says it: "just now", "5m ago", "2h ago", "3d ago", then the date. */
export function formatAgo(at: string | null | undefined, now: number): string {
  const t = timeOf(at);
  if (t === 0) return '';
  const ago = Math.max(0, now - t);
  if (ago < minute) return 'just now';
  if (ago < hour) return `${Math.floor(ago / minute)}m ago`;
  if (ago < day) return `${Math.floor(ago / hour)}h ago`;
  if (ago < 7 * day) return `${Math.floor(ago / day)}d ago`;
  return new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric', ...(new Date(t).getFullYear() !== new Date(now).getFullYear() ? { year: 'numeric' } : {}) });
}

const startOfDay = (ms: number): number => {
  const d = new Date(ms);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
};

/** The heading of the local day at falls on: "Today", "Yesterday", a weekday this week, else the date. */
export function dayLabel(at: number, now: number): string {
  const days = Math.round((startOfDay(now) - startOfDay(at)) / day);
  if (days <= 0) return 'Today';
  if (days === 1) return 'Yesterday';
  const d = new Date(at);
  if (days < 7) return d.toLocaleDateString(undefined, { weekday: 'long' });
  return d.toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric', ...(d.getFullYear() !== new Date(now).getFullYear() ? { year: 'numeric' } : {}) });
}

/** Finished tasks under one day's heading. */
export interface DayGroup {
  day: string;
  tasks: Task[];
}

/** Splits a finished list (newest first) into days, keeping its order. */
export function byDay(tasks: readonly Task[], now: number): DayGroup[] {
  const out: DayGroup[] = [];
  // The bounds of the last task's day: the tasks after it on that day take
  // its heading without working the date out again.
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const t of tasks) {
    const at = timeOf(t.endedAt ?? t.createdAt);
    const last = out[out.length - 1];
    if (last && at >= from && at < to) {
      last.tasks.push(t);
      continue;
    }
    from = startOfDay(at);
    const next = new Date(from);
    next.setDate(next.getDate() + 1);
    to = next.getTime();
    const label = dayLabel(at, now);
    if (last && last.day === label) last.tasks.push(t);
    else out.push({ day: label, tasks: [t] });
  }
  return out;
}

/** The statuses the filter offers. */
export const StatusFilter = { All: '', Done: 'done', Failed: 'failed', Declined: 'declined', Stopped: 'stopped', Interrupted: 'interrupted' } as const;
export type StatusFilter = (typeof StatusFilter)[keyof typeof StatusFilter];

/** Each filter status in words, in the order offered. */
export const statusFilterLabel: Readonly<Record<StatusFilter, string>> = {
  [StatusFilter.All]: 'Any outcome',
  [StatusFilter.Done]: 'Done',
  [StatusFilter.Failed]: "Didn't finish",
  [StatusFilter.Declined]: 'Declined',
  [StatusFilter.Stopped]: 'Stopped',
  [StatusFilter.Interrupted]: 'Interrupted',
};

/** The chat filter's value for commands sent from the tasks page (no chat). */
export const noChat = '-';

/** What the finished list is narrowed to; the zero value shows everything. */
export interface TaskFilter {
  status: StatusFilter;
  /** '' any chat, noChat commands, else the chat's id. */
  chat: string;
  text: string;
}

export const emptyFilter: TaskFilter = { status: StatusFilter.All, chat: '', text: '' };

/** Reports whether f narrows anything. */
export function isFiltering(f: TaskFilter): boolean {
  return f.status !== StatusFilter.All || f.chat !== '' || f.text.trim() !== '';
}

function statusMatches(t: Task, s: StatusFilter): boolean {
  switch (s) {
    case StatusFilter.All:
      return true;
    case StatusFilter.Declined:
      return isDeclined(t);
    case StatusFilter.Failed:
      return t.status === Status.Failed && !isDeclined(t);
    default:
      return t.status === s;
  }
}

/** The tasks of list that f lets through, in the same order. Text matches title, text, summary and error, case and accents aside. */
export function filterTasks(list: readonly Task[], f: TaskFilter): Task[] {
  const words = fold(f.text).split(/\s+/).filter((w) => w !== '');
  return list.filter((t) => {
    if (!statusMatches(t, f.status)) return false;
    if (f.chat === noChat ? t.parentConversationId !== '' : f.chat !== '' && t.parentConversationId !== f.chat) return false;
    if (words.length === 0) return true;
    const hay = fold(`${t.title}\n${t.text}\n${t.summary}\n${t.error}`);
    return words.every((w) => hay.includes(w));
  });
}

function fold(s: string): string {
  return s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

/** The chats finished tasks came from (their ids, TasksStore.finishedChats), for the chat filter: id and title, by title. */
export function chatChoices(chats: Iterable<string>, titleOf: (id: string) => string): { id: string; title: string }[] {
  return [...new Set(chats)].filter((id) => id !== '').map((id) => ({ id, title: titleOf(id) })).sort((a, b) => a.title.localeCompare(b.title));
}
