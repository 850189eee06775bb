// The settings page's rules: what a limit may be and how a change becomes
// the whole preferences object that SetPreferences (and PATCH) take.

import { ShellProvider, budgetRange, limitRange, retentionRange, type Preferences, type Provider } from '../backend/contract';

/** A limit preferences hold. */
export type LimitKey = keyof Preferences['limits'];
/** A notification topic preferences hold. */
export type TopicKey = keyof Preferences['notifications'];

/** The words of each notification topic (SPEC §3, Notifications). */
export const topicLabel: Readonly<Record<TopicKey, string>> = {
  tasks: 'When a background task finishes',
  approvals: 'When a task needs your OK',
};

/** The words of each limit. */
export const limitLabel: Readonly<Record<LimitKey, { label: string; explain: string }>> = {
  background: { label: 'Background tasks at once', explain: 'The rest wait in line, first come first served.' },
  helper: { label: 'Helpers at once', explain: 'Parts of a split job that run side by side.' },
};

/** Reads what was typed into a limit field: the number, or one sentence saying what is wrong. */
export function parseLimit(raw: string): { value: number } | { error: string } {
  const s = raw.trim();
  if (s === '') return { error: `Enter a number from ${limitRange.min} to ${limitRange.max}.` };
  if (!/^\d+$/.test(s)) return { error: `Use a whole number from ${limitRange.min} to ${limitRange.max}.` };
  const n = Number(s);
  if (n < limitRange.min || n > limitRange.max) return { error: `Use a number from ${limitRange.min} to ${limitRange.max}.` };
  return { value: n };
}

/** p with one limit changed. */
export function withLimit(p: Preferences, key: LimitKey, value: number): Preferences {
  return { ...p, limits: { ...p.limits, [key]: value }, notifications: { ...p.notifications } };
}

/** p with one notification topic on or off. */
export function withTopic(p: Preferences, key: TopicKey, on: boolean): Preferences {
  return { ...p, limits: { ...p.limits }, notifications: { ...p.notifications, [key]: on } };
}

/** Reads what was typed into the monthly budget field: dollars (0 for no cap), or one sentence saying what is wrong. */
export function parseBudget(raw: string): { value: number } | { error: string } {
  const s = raw.trim().replace(/^\$/, '');
  if (s === '') return { value: 0 };
  if (!/^\d+(\.\d{1,2})?$/.test(s)) return { error: 'Use an amount in dollars, like 20 or 12.50; 0 means no cap.' };
  const n = Number(s);
  if (n > budgetRange.max) return { error: `Use at most ${budgetRange.max.toLocaleString('en-US')} dollars.` };
  return { value: n };
}

/** The money settings: the month's budget and a delegated job's cap. */
export type MoneyKey = 'monthly' | 'jobCap';

/** p with one money setting changed (the other kept). */
export function withBudget(p: Preferences, value: number, key: MoneyKey = 'monthly'): Preferences {
  const budget = { monthly: p.budget?.monthly ?? 0, jobCap: p.budget?.jobCap ?? 0 };
  budget[key] = value;
  return { ...p, limits: { ...p.limits }, notifications: { ...p.notifications }, budget };
}

/** The words of the limit fallback setting. */
export const fallbackText = {
  label: 'When a provider reaches its limit',
  none: 'Fail the task (no fallback)',
  explain: 'A task whose provider reaches its usage limit runs again once on this provider, and its card says so.',
} as const;

/** One choice of the limit fallback select: a provider id ('' for none) and its words. */
export interface FallbackChoice {
  id: string;
  label: string;
}

/**
 * The choices for the limit fallback: none first, then every connected
 * provider (ready and able to ask) by name. The saved one stays offered, said
 * to be unavailable, when it is not connected now.
 */
export function fallbackChoices(providers: readonly Pick<Provider, 'id' | 'name' | 'ready' | 'canAsk'>[], current: string): FallbackChoice[] {
  const choices: FallbackChoice[] = [{ id: '', label: fallbackText.none }];
  // The shell would run a task's words as a command: it never carries one on.
  const usable = providers.filter((p) => p.ready && p.canAsk && p.id !== ShellProvider);
  for (const p of usable) choices.push({ id: p.id, label: p.name.trim() !== '' ? p.name : p.id });
  if (current !== '' && !usable.some((p) => p.id === current)) {
    const known = providers.find((p) => p.id === current);
    const name = known && known.name.trim() !== '' ? known.name : current;
    choices.push({ id: current, label: `${name} (${known ? 'not ready' : 'not connected'})` });
  }
  return choices;
}

/** p with the limit fallback changed ('' for none). */
export function withLimitFallback(p: Preferences, id: string): Preferences {
  return { ...p, limits: { ...p.limits }, notifications: { ...p.notifications }, limitFallback: id };
}

/** The words of the retention setting. */
export const retentionText = {
  label: 'Keep finished tasks for (days)',
  explain: 'Finished tasks that ended longer ago are deleted with their output, at start and then daily; their chats stay. 0 keeps them forever.',
} as const;

/** Reads what was typed into the retention field: whole days (0 keeps forever), or one sentence saying what is wrong. */
export function parseRetention(raw: string): { value: number } | { error: string } {
  const s = raw.trim();
  const range = `from ${retentionRange.min} (forever) to ${retentionRange.max.toLocaleString('en-US')}`;
  if (s === '') return { error: `Enter a number of days ${range}.` };
  if (!/^\d+$/.test(s)) return { error: `Use a whole number of days ${range}.` };
  const n = Number(s);
  if (n > retentionRange.max) return { error: `Use a number of days ${range}.` };
  return { value: n };
}

/** p with the retention changed. */
export function withRetention(p: Preferences, days: number): Preferences {
  return { ...p, limits: { ...p.limits }, notifications: { ...p.notifications }, retentionDays: days };
}

/** A size in bytes as a person reads it: 812 bytes, 14 KB, 3.2 MB. */
export function sizeText(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return bytes === 1 ? '1 byte' : `${bytes} bytes`;
}

