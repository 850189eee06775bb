import { describe, expect, it } from 'vitest';
import { overlapLines, sentence } from './overlap';

const titles: Record<string, string> = { t2: 'Write the tests', t3: 'Document it' };
const titleOf = (id: string): string | undefined => titles[id];

describe('overlapLines', () => {
  it('names both helpers and the file, as the merged result does', () => {
    expect(overlapLines('Fix the bug', [{ file: 'src/app.ts', with: ['t2'] }], titleOf)).toEqual(["Both 'Fix the bug' and 'Write the tests' changed `src/app.ts`."]);
  });

  it('says one sentence for each set of helpers, files sorted', () => {
    const lines = overlapLines(
      'Fix the bug',
      [
        { file: 'src/b.ts', with: ['t2'] },
        { file: 'README.md', with: ['t2', 't3'] },
        { file: 'src/a.ts', with: ['t2'] },
      ],
      titleOf,
    );
    expect(lines).toEqual(["Both 'Fix the bug' and 'Write the tests' changed `src/a.ts` and `src/b.ts`.", "'Fix the bug', 'Write the tests' and 'Document it' all changed `README.md`."]);
  });

  it('says nothing without overlaps, and stands in for a helper it does not know', () => {
    expect(overlapLines('Fix', undefined, titleOf)).toEqual([]);
    expect(overlapLines('Fix', null, titleOf)).toEqual([]);
    expect(overlapLines('Fix', [{ file: 'x', with: null }], titleOf)).toEqual([]);
    expect(overlapLines('Fix', [{ file: 'x', with: ['gone'] }], titleOf)).toEqual(["Both 'Fix' and 'another helper' changed `x`."]);
  });
});

describe('sentence', () => {
  it('counts the files past the first few', () => {
    expect(sentence(['A', 'B'], ['1', '2', '3', '4', '5'])).toBe("Both 'A' and 'B' changed `1`, `2`, `3`, `4` and `5`.");
    expect(sentence(['A', 'B'], ['1', '2', '3', '4', '5', '6'])).toBe("Both 'A' and 'B' changed `1`, `2`, `3`, `4` and 2 more files.");
  });

  it('keeps backticks in a title or a path from breaking the code spans', () => {
    expect(sentence(['A `x`', 'B'], ['a`b'])).toBe("Both 'A x' and 'B' changed `ab`.");
  });
});
