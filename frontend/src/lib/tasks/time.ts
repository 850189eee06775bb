import type { Task } from '../backend/contract';

const pad = (n: number): string => String(n).padStart(2, '0');

/** A duration as "7s", "1m 05s", "2h 03m"; negative counts as zero. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${pad(s % 60)}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${pad(m % 60)}m`;
}

/** Times already parsed: thousands of finished tasks are sorted and grouped by day every frame that changes one. */
const parsed = new Map<string, number>();
const parsedMax = 50_000;

function parse(at: string | null | undefined): number | null {
  if (!at) return null;
  let t = parsed.get(at);
  if (t === undefined) {
    t = Date.parse(at);
    if (parsed.size >= parsedMax) parsed.clear();
    parsed.set(at, t);
  }
  return Number.isNaN(t) ? null : t;
}

/** How long a task has run (until it ended, else until now), or null before it started. */
export function elapsedMs(t: Pick<Task, 'startedAt' | 'endedAt'>, now: number): number | null {
  const start = parse(t.startedAt);
  if (start === null) return null;
  return Math.max(0, (parse(t.endedAt) ?? now) - start);
}

/** The elapsed text of a card, or '' before it started. */
export function formatElapsed(t: Pick<Task, 'startedAt' | 'endedAt'>, now: number): string {
  const ms = elapsedMs(t, now);
  return ms === null ? '' : formatDuration(ms);
}

/** The time left to answer a question, as a phrase: "59m 12s left", or "time is up". */
export function formatTimeLeft(expiresAt: string, now: number): string {
  const end = parse(expiresAt);
  if (end === null) return '';
  const left = end - now;
  return left <= 0 ? 'time is up' : `${formatDuration(left)} left`;
}

/** Milliseconds since the epoch of an RFC 3339 time, or 0 when missing. */
export function timeOf(at: string | null | undefined): number {
  return parse(at) ?? 0;
}
