// Removing a finished helper's kept worktree: the pure rules of the card's
// "Remove worktree" action. The first call never confirms; a worktree that
// holds work answers 409 saying what, and the card asks the person before
// calling again with confirm.

import { ErrorCode, isFinished, type Status, type Worktree } from '../backend/contract';
import type { ApiError } from '../backend/error';

/** Where the card's removal stands. */
export type Removal =
  | { phase: 'idle' }
  /** The first call (confirm: false) is out. */
  | { phase: 'checking' }
  /** The worktree holds work: the server's words, waiting for the person's say. */
  | { phase: 'confirm'; message: string }
  /** The confirmed call is out. */
  | { phase: 'removing' }
  /** It could not be removed; the worktree and its branch are as they were. */
  | { phase: 'error'; message: string };

export const idle: Removal = { phase: 'idle' };

/** What a card says of a task's worktree. */
export type WorktreeState = 'none' | 'in-use' | 'kept' | 'removed';

/** kept: finished and still there, removable; removed: finished and gone; in-use: the task is not finished yet. */
export function worktreeState(status: Status, w: Pick<Worktree, 'kept'> | null | undefined): WorktreeState {
  if (!w) return 'none';
  if (!isFinished(status)) return 'in-use';
  return w.kept ? 'kept' : 'removed';
}

/** True while a call is out. */
export function busy(r: Removal): boolean {
  return r.phase === 'checking' || r.phase === 'removing';
}

/** The server's sentence, tidied for the card: no "Conflict:" lead, a capital and a full stop. */
export function tidy(message: string): string {
  const m = message.trim().replace(/^conflict:\s*/i, '');
  if (m === '') return 'Something went wrong; try again.';
  const s = m.charAt(0).toUpperCase() + m.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

/**
 * What follows a failed call. Unconfirmed, a conflict that asks for a
 * confirmation (it holds work) asks the person; anything else is an error
 * shown inline, and nothing was removed.
 */
export function afterFailure(err: Pick<ApiError, 'code' | 'message'>, confirmed: boolean): Removal {
  if (!confirmed && err.code === ErrorCode.Conflict && /\bconfirm\b/i.test(err.message)) return { phase: 'confirm', message: tidy(err.message) };
  return { phase: 'error', message: tidy(err.message) };
}
