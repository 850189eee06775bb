// The status language of UI.md: one table used everywhere a status is shown
// (card, sidebar, and later the tray and notifications).

import { Mode, ResultSource, Status, type Task, type Worktree } from '../backend/contract';

/** The colour family of a status; the CSS maps each to a light and a dark shade. */
export const Tone = {
  Grey: 'grey',
  Blue: 'blue',
  Amber: 'amber',
  Green: 'green',
  Red: 'red',
  Orange: 'orange',
} as const;
export type Tone = (typeof Tone)[keyof typeof Tone];

/** The small picture beside a status word. */
export const Icon = {
  Clock: 'clock',
  Spinner: 'spinner',
  Hand: 'hand',
  Check: 'check',
  Cross: 'cross',
  Square: 'square',
  BrokenLink: 'broken-link',
} as const;
export type Icon = (typeof Icon)[keyof typeof Icon];

/** How one status reads: its word, colour and icon. */
export interface StatusLanguage {
  word: string;
  tone: Tone;
  icon: Icon;
}

/** The table. */
export const statusLanguage: Readonly<Record<Status, StatusLanguage>> = {
  [Status.Queued]: { word: 'Waiting', tone: Tone.Grey, icon: Icon.Clock },
  [Status.Running]: { word: 'Working', tone: Tone.Blue, icon: Icon.Spinner },
  [Status.NeedsYou]: { word: 'Needs your OK', tone: Tone.Amber, icon: Icon.Hand },
  [Status.Done]: { word: 'Done', tone: Tone.Green, icon: Icon.Check },
  [Status.Failed]: { word: "Didn't finish", tone: Tone.Red, icon: Icon.Cross },
  [Status.Stopped]: { word: 'Stopped', tone: Tone.Grey, icon: Icon.Square },
  [Status.Interrupted]: { word: 'Interrupted', tone: Tone.Orange, icon: Icon.BrokenLink },
};

/** The sentence an interrupted task carries. */
export const interruptedDetail = 'Conch stopped while this was running.';
/** What a card that needs the person says to draw the eye. */
export const needsYouDetail = "See what it's asking";

/** English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 112th. */
export function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  switch (n % 10) {
    case 1:
      return `${n}st`;
    case 2:
      return `${n}nd`;
    case 3:
      return `${n}rd`;
    default:
      return `${n}th`;
  }
}

/**
 * The word on a task's status chip: "Waiting (2nd in line)" given its queue
 * position, "Done (verified)" when a check passed, else the table's word.
 */
export function chipWord(t: Pick<Task, 'status' | 'result'>, position?: number): string {
  const word = statusLanguage[t.status].word;
  if (t.status === Status.Queued && position !== undefined && position > 0) return `${word} (${ordinal(position)} in line)`;
  if (t.status === Status.Done && t.result?.source === ResultSource.Check) return `${word} (verified)`;
  return word;
}

/** Why a task did not finish, in a few words: its error, else its exit code. */
export function failureReason(t: Pick<Task, 'error' | 'exitCode'>): string {
  if (t.error.trim() !== '') return t.error.trim();
  if (t.exitCode !== null && t.exitCode !== 0) return `exited with code ${t.exitCode}`;
  return '';
}

/** The line that follows the chip's word: what it is doing, why it stopped, or nothing. */
export function statusDetail(t: Pick<Task, 'status' | 'current' | 'error' | 'exitCode'>): string {
  switch (t.status) {
    case Status.Running:
      return t.current;
    case Status.NeedsYou:
      return needsYouDetail;
    case Status.Failed:
      return failureReason(t);
    case Status.Interrupted:
      return interruptedDetail;
    default:
      return '';
  }
}

/** The first sentence of a text (for one-line summaries). */
export function firstSentence(s: string): string {
  // A reply that is a code block (a shell chat's) starts with its fence: the sentence is inside.
  const line = s.trim().split('\n').find((l) => !/^\s*(```|~~~)/.test(l) && l.trim() !== '') ?? '';
  const m = /^(.+?[.!?])(\s|$)/.exec(line);
  return (m?.[1] ?? line).trim();
}

/** The tasks page's groups, in the order shown. */
export const Group = { NeedsYou: 'needs-you', Working: 'working', Waiting: 'waiting', Finished: 'finished' } as const;
export type Group = (typeof Group)[keyof typeof Group];

/** The heading of each group. */
export const groupLabel: Readonly<Record<Group, string>> = {
  [Group.NeedsYou]: 'Needs you',
  [Group.Working]: 'Working',
  [Group.Waiting]: 'Waiting',
  [Group.Finished]: 'Finished',
};

/** Each mode in a word and one line, for the composer. */
export const modeLanguage: Readonly<Record<Mode, { label: string; explain: string }>> = {
  [Mode.Ask]: { label: 'Ask', explain: 'Asks for your OK before it runs anything.' },
  [Mode.Plan]: { label: 'Plan', explain: 'Read only: anything with side effects is refused.' },
  [Mode.Edits]: { label: 'Edits', explain: 'File edits go ahead; commands ask first.' },
  [Mode.Auto]: { label: 'Auto', explain: 'Runs without asking. Use it for commands you trust.' },
};

/** The modes in the order the composer offers them (the default first). */
export const composerModes: readonly Mode[] = [Mode.Ask, Mode.Plan, Mode.Edits, Mode.Auto];

/** What a helper's worktree holds, as a card says it: "3 changed · 2 commits ahead". */
export function worktreeLine(w: Pick<Worktree, 'work'>): string {
  const { changed, untracked, ahead, behind, operation } = w.work;
  const parts: string[] = [];
  if (changed > 0) parts.push(`${changed} changed`);
  if (untracked > 0) parts.push(`${untracked} new`);
  if (ahead > 0) parts.push(`${ahead} ${ahead === 1 ? 'commit' : 'commits'} ahead`);
  if (behind > 0) parts.push(`${behind} behind`);
  if (operation) parts.push(`${operation} in progress`);
  return parts.length > 0 ? parts.join(' · ') : 'no changes';
}
