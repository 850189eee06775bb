import { describe, expect, it } from 'vitest';
import { Status } from '../backend/contract';
import { ApiError } from '../backend/error';
import { afterFailure, busy, tidy, worktreeState } from './worktree';

describe('worktreeState', () => {
  it('says kept only for a finished task whose worktree is still there', () => {
    expect(worktreeState(Status.Done, { kept: true })).toBe('kept');
    expect(worktreeState(Status.Failed, { kept: true })).toBe('kept');
    expect(worktreeState(Status.Done, { kept: false })).toBe('removed');
    expect(worktreeState(Status.Running, { kept: false })).toBe('in-use');
    expect(worktreeState(Status.NeedsYou, { kept: true })).toBe('in-use');
    expect(worktreeState(Status.Done, null)).toBe('none');
    expect(worktreeState(Status.Done, undefined)).toBe('none');
  });
});

describe('afterFailure', () => {
  const holds = new ApiError('conflict', 'Conflict: its worktree holds work (1 changed file, 2 commits); confirm to remove it and its branch conch/t1', 409);

  it('asks the person when an unconfirmed removal holds work, quoting what it holds', () => {
    expect(afterFailure(holds, false)).toEqual({
      phase: 'confirm',
      message: 'Its worktree holds work (1 changed file, 2 commits); confirm to remove it and its branch conch/t1.',
    });
  });

  it('shows any other failure, and a failed confirmed call, as an error', () => {
    expect(afterFailure(holds, true).phase).toBe('error');
    expect(afterFailure(new ApiError('conflict', 'Task t1 keeps no worktree.', 409), false)).toEqual({ phase: 'error', message: 'Task t1 keeps no worktree.' });
    expect(afterFailure(new ApiError('network', 'Conch is not answering', 0), false)).toEqual({ phase: 'error', message: 'Conch is not answering.' });
    expect(afterFailure(new ApiError('internal', '', 500), true)).toEqual({ phase: 'error', message: 'Something went wrong; try again.' });
  });
});

describe('busy and tidy', () => {
  it('is busy only while a call is out', () => {
    expect(busy({ phase: 'checking' })).toBe(true);
    expect(busy({ phase: 'removing' })).toBe(true);
    expect(busy({ phase: 'idle' })).toBe(false);
    expect(busy({ phase: 'confirm', message: 'x' })).toBe(false);
    expect(busy({ phase: 'error', message: 'x' })).toBe(false);
  });
  it('keeps a sentence that already ends', () => {
    expect(tidy('  done!  ')).toBe('Done!');
  });
});
