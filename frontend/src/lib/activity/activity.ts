// Activity's pure rules: how a row reads (its outcome, duration and kind)
// and how pages join into days.

import { Status, type ActivityDay, type ActivityRow } from '../backend/contract';
import { statusLanguage, type Tone } from '../tasks/language';

/** How a row's outcome reads: the tasks' words, and "Replied" for a chat's reply that finished. */
export function outcomeOf(r: Pick<ActivityRow, 'kind' | 'outcome'>): { word: string; tone: Tone } {
  if (r.kind === 'turn' && r.outcome === 'done') return { word: 'Replied', tone: statusLanguage[Status.Done].tone };
  const lang = statusLanguage[r.outcome as Status] ?? statusLanguage[Status.Failed];
  return { word: lang.word, tone: lang.tone };
}

/** What kind of thing ran, as the row says it. */
export const kindWord: Readonly<Record<string, string>> = { task: 'Task', helper: 'Helper', routine: 'Routine run', turn: 'Chat reply' };

/** How long it ran, in the largest two units ("2 min 5 s", "800 ms", "1 h 3 min"). */
export function durationWords(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`;
}

/** A day's heading: "Today", "Yesterday", else "Monday 30 November" (and the year when it is not this one). */
export function dayHeading(date: string, now: Date): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const day = new Date(y, m - 1, d);
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const diff = Math.round((today.getTime() - day.getTime()) / 86_400_000);
  if (diff === 0) return 'Today';
  if (diff === 1) return 'Yesterday';
  const words = [
    day.toLocaleDateString('en-GB', { weekday: 'long' }),
    String(d),
    day.toLocaleDateString('en-GB', { month: 'long' }),
  ];
  if (y !== now.getFullYear()) words.push(String(y));
  return words.join(' ');
}

/** The days shown so far with a next page added: a day the last page ended in goes on, no row twice. */
export function joinDays(have: ActivityDay[], more: ActivityDay[]): ActivityDay[] {
  const out = have.map((d) => ({ ...d, rows: [...d.rows] }));
  const seen = new Set(out.flatMap((d) => d.rows.map(rowKey)));
  for (const d of more) {
    const rows = d.rows.filter((r) => !seen.has(rowKey(r)));
    const last = out[out.length - 1];
    if (last && last.date === d.date) last.rows.push(...rows);
    else out.push({ ...d, rows });
  }
  return out;
}

/** A row's identity: what ran, and when it ended. */
export function rowKey(r: Pick<ActivityRow, 'kind' | 'id' | 'endedAt'>): string {
  return `${r.kind}:${r.id}:${r.endedAt}`;
}
