import { describe, expect, it } from 'vitest';
import { ResultSource, Status, statuses } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { chipWord, firstSentence, ordinal, statusDetail, statusLanguage, worktreeLine } from './language';

describe('status language', () => {
  it('has a word, tone and icon for every status', () => {
    for (const s of statuses) {
      expect(statusLanguage[s].word).not.toBe('');
    }
  });

  it('says the place in line', () => {
    expect(chipWord(makeTask({ id: 'a' }), 2)).toBe('Waiting (2nd in line)');
    expect(chipWord(makeTask({ id: 'a' }))).toBe('Waiting');
  });

  it('says verified when a check passed', () => {
    const at = '2026-11-30T06:00:00Z';
    expect(chipWord(makeTask({ id: 'a', status: Status.Done, result: { text: '', source: ResultSource.Check, at } }))).toBe('Done (verified)');
    expect(chipWord(makeTask({ id: 'a', status: Status.Done, result: { text: '', source: ResultSource.Exit, at } }))).toBe('Done');
  });

  it('gives the reason a task did not finish', () => {
    expect(statusDetail(makeTask({ id: 'a', status: Status.Failed, exitCode: 2 }))).toBe('exited with code 2');
    expect(statusDetail(makeTask({ id: 'a', status: Status.Failed, error: 'bash not found', exitCode: 127 }))).toBe('bash not found');
    expect(statusDetail(makeTask({ id: 'a', status: Status.Running, current: 'Running npm test' }))).toBe('Running npm test');
    expect(statusDetail(makeTask({ id: 'a', status: Status.Interrupted }))).toBe('Conch stopped while this was running.');
    expect(statusDetail(makeTask({ id: 'a', status: Status.NeedsYou }))).toBe("See what it's asking");
  });

  it('writes ordinals', () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112].map(ordinal)).toEqual([
      '1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '23rd', '101st', '111th', '112th',
    ]);
  });

  it('finds the first sentence', () => {
    expect(firstSentence('Built it. Then tested.')).toBe('Built it.');
    expect(firstSentence('hello-e2e\nmore')).toBe('hello-e2e');
    expect(firstSentence('```text\nfrom-a-routine\n```')).toBe('from-a-routine');
    expect(firstSentence('  ')).toBe('');
  });

  it('says what a worktree holds', () => {
    expect(worktreeLine({ work: { changed: 3, untracked: 0, ahead: 2, behind: 0 } })).toBe('3 changed · 2 commits ahead');
    expect(worktreeLine({ work: { changed: 0, untracked: 1, ahead: 1, behind: 4, operation: 'rebase' } })).toBe('1 new · 1 commit ahead · 4 behind · rebase in progress');
    expect(worktreeLine({ work: { changed: 0, untracked: 0, ahead: 0, behind: 0 } })).toBe('no changes');
  });
});
