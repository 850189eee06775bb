// The Routines page's pure rules: how a routine's card reads.

import { RoutineKind, Status, type RoutineCard } from '../backend/contract';
import { statusLanguage, type Tone } from '../tasks/language';

/** When its next run is, as the card says it ("Paused" while paused). */
export function nextWords(c: Pick<RoutineCard, 'next' | 'routine'>, now: Date): string {
  if (c.routine.paused) return 'Paused: no new runs';
  if (!c.next) return 'No run to come';
  return 'Next run ' + when(new Date(c.next), now);
}

/** A moment as the card says it: "today at 09:00", "tomorrow at 09:00", else the weekday and date. */
export function when(t: Date, now: Date): string {
  const time = t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const day = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const diff = Math.round((day(t) - day(now)) / 86_400_000);
  if (diff === 0) return `today at ${time}`;
  if (diff === 1) return `tomorrow at ${time}`;
  if (diff === -1) return `yesterday at ${time}`;
  return `${t.toLocaleDateString('en-GB', { weekday: 'short', day: 'numeric', month: 'short' })} at ${time}`;
}

/** How its last run went: the tasks' words, or none yet. */
export function lastWords(c: Pick<RoutineCard, 'last'>): { word: string; tone: Tone } | null {
  if (!c.last) return null;
  const lang = statusLanguage[c.last.status as Status] ?? statusLanguage[Status.Failed];
  return { word: lang.word, tone: lang.tone };
}

/** What kind of routine it is, in words. */
export function kindWords(kind: string): string {
  return kind === RoutineKind.RoutineCommand ? 'Command' : 'Prompt';
}
