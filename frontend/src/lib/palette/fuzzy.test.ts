import { describe, expect, it } from 'vitest';
import { fuzzyFilter, fuzzyMatch, highlight } from './fuzzy';

describe('fuzzyMatch', () => {
  it('matches characters in order, any case', () => {
    expect(fuzzyMatch('tsk', 'Tasks')?.positions).toEqual([0, 2, 3]);
    expect(fuzzyMatch('TASKS', 'tasks')).not.toBeNull();
    expect(fuzzyMatch('kst', 'Tasks')).toBeNull();
    expect(fuzzyMatch('tasksx', 'Tasks')).toBeNull();
  });

  it('matches everything with an empty or blank query', () => {
    expect(fuzzyMatch('', 'Doctor')).toEqual({ score: 0, positions: [] });
    expect(fuzzyMatch('   ', 'Doctor')).toEqual({ score: 0, positions: [] });
  });

  it('ignores spaces in the query', () => {
    expect(fuzzyMatch('do it', 'Do it in the background')).not.toBeNull();
  });

  it('prefers a prefix over a match in the middle', () => {
    const prefix = fuzzyMatch('set', 'Settings')!.score;
    const middle = fuzzyMatch('set', 'Reset the cache')!.score;
    expect(prefix).toBeGreaterThan(middle);
  });

  it('prefers word starts and runs over scattered letters', () => {
    const words = fuzzyMatch('dib', 'Do it in the background')!;
    expect(words.positions).toEqual([0, 3, 13]);
    const run = fuzzyMatch('app', 'Approvals')!.score;
    const scattered = fuzzyMatch('app', 'a paper plane')!.score;
    expect(run).toBeGreaterThan(scattered);
  });

  it('finds the best start, not the first', () => {
    // "ls" at the start of a word in "echo ls" beats the l in "hello".
    const m = fuzzyMatch('ls', 'hello ls');
    expect(m?.positions).toEqual([6, 7]);
  });

  it('falls back to the earliest letters when word starts lead nowhere', () => {
    // From the h of "echo", the word start "e2e" has no "l" after it.
    expect(fuzzyMatch('hello-e2e', 'echo hello-e2e')?.positions).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(fuzzyMatch('hl', 'echo hello')).not.toBeNull();
  });

  it('prefers the shorter text on a tie', () => {
    expect(fuzzyMatch('doc', 'Doctor')!.score).toBeGreaterThan(fuzzyMatch('doc', 'Doctor says hello')!.score);
  });

  it('scores word starts found through camel case', () => {
    expect(fuzzyMatch('gt', 'goTest')!.positions).toEqual([0, 2]);
  });
});

describe('fuzzyFilter', () => {
  const items = ['Do it in the background', 'Tasks', 'Approvals', 'Doctor', 'Settings'];

  it('keeps the order for an empty query', () => {
    expect(fuzzyFilter(items, '', (s) => s).map((r) => r.item)).toEqual(items);
  });

  it('drops what does not match and puts the best first', () => {
    expect(fuzzyFilter(items, 'do', (s) => s).map((r) => r.item)).toEqual(['Doctor', 'Do it in the background']);
    expect(fuzzyFilter(items, 'ts', (s) => s).map((r) => r.item)[0]).toBe('Tasks');
    expect(fuzzyFilter(items, 'zzz', (s) => s)).toEqual([]);
  });
});

describe('highlight', () => {
  it('splits into matched and unmatched runs', () => {
    expect(highlight('Tasks', [0, 2, 3])).toEqual([
      { text: 'T', hit: true },
      { text: 'a', hit: false },
      { text: 'sk', hit: true },
      { text: 's', hit: false },
    ]);
    expect(highlight('ab', [])).toEqual([{ text: 'ab', hit: false }]);
  });
});
