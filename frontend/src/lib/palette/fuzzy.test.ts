import { describe, expect, it } from 'vitest';
import { fuzzyFilter, fuzzyMatch, highlight } from './fuzzy';

describe('fuzzyMatch', () => {
  it('matches the starts of words, any case', () => {
    expect(fuzzyMatch('tas', 'Tasks')?.positions).toEqual([0, 1, 2]);
    expect(fuzzyMatch('TASKS', 'tasks')).not.toBeNull();
    expect(fuzzyMatch('sta', 'Check the staging plan')?.positions).toEqual([10, 11, 12]);
    expect(fuzzyMatch('tasksx', 'Tasks')).toBeNull();
  });

  it('never matches letters scattered across the text', () => {
    expect(fuzzyMatch('test', 'Check the staging plan')).toBeNull();
    expect(fuzzyMatch('tsks', 'Tasks')).toBeNull();
    expect(fuzzyMatch('kst', 'Tasks')).toBeNull();
  });

  it('matches everything with an empty or blank query', () => {
    expect(fuzzyMatch('', 'Doctor')).toEqual({ score: 0, positions: [] });
    expect(fuzzyMatch('   ', 'Doctor')).toEqual({ score: 0, positions: [] });
  });

  it('needs every word of the query, in any order', () => {
    expect(fuzzyMatch('do it', 'Do it in the background')).not.toBeNull();
    expect(fuzzyMatch('check notes', 'Notes check')).not.toBeNull();
    expect(fuzzyMatch('notes zebra', 'Notes check')).toBeNull();
  });

  it('matches initials of words in a row', () => {
    expect(fuzzyMatch('dii', 'Do it in the background')?.positions).toEqual([0, 3, 6]);
    expect(fuzzyMatch('gt', 'goTest')?.positions).toEqual([0, 2]);
  });

  it('matches inside a word only from three letters on', () => {
    expect(fuzzyMatch('port', 'Import the data')?.positions).toEqual([2, 3, 4, 5]);
    expect(fuzzyMatch('po', 'Import the data')).toBeNull();
  });

  it('prefers a prefix over a match inside a word', () => {
    const prefix = fuzzyMatch('set', 'Settings')!.score;
    const middle = fuzzyMatch('set', 'Reset the cache')!.score;
    expect(prefix).toBeGreaterThan(middle);
    const word = fuzzyMatch('test', 'Run the test suite')!.score;
    const inside = fuzzyMatch('test', 'The latest build')!.score;
    expect(word).toBeGreaterThan(inside);
  });

  it('matches a command by a word in it', () => {
    expect(fuzzyMatch('hello-e2e', 'echo hello-e2e')?.positions).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(fuzzyMatch('ls', 'hello ls')?.positions).toEqual([6, 7]);
  });

  it('prefers the shorter text on a tie', () => {
    expect(fuzzyMatch('doc', 'Doctor')!.score).toBeGreaterThan(fuzzyMatch('doc', 'Doctor says hello')!.score);
  });
});

describe('fuzzyFilter', () => {
  const items = ['Do it in the background', 'Tasks', 'Approvals', 'Doctor', 'Settings'];

  it('keeps the order for an empty query', () => {
    expect(fuzzyFilter(items, '', (s) => s).map((r) => r.item)).toEqual(items);
  });

  it('drops what does not match and puts the best first', () => {
    expect(fuzzyFilter(items, 'do', (s) => s).map((r) => r.item)).toEqual(['Doctor', 'Do it in the background']);
    expect(fuzzyFilter(items, 'ta', (s) => s).map((r) => r.item)).toEqual(['Tasks']);
    expect(fuzzyFilter(items, 'test', (s) => s)).toEqual([]);
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
