import { describe, expect, it } from 'vitest';
import { diffStat, hunks, lineDiff } from './diff';

const show = (d: { kind: string; text: string }[]) => d.map((l) => `${{ same: ' ', add: '+', del: '-', gap: '~' }[l.kind]}${l.text}`);

describe('lineDiff', () => {
  it('marks a changed line as removed and added, keeping the rest', () => {
    expect(show(lineDiff('# Title\nold line\nend\n', '# Title\nnew line\nend\n'))).toEqual([' # Title', '-old line', '+new line', ' end']);
  });
  it('shows a new file as all added, and an emptied one as all removed', () => {
    expect(show(lineDiff('', 'a\nb'))).toEqual(['+a', '+b']);
    expect(show(lineDiff('a\nb\n', ''))).toEqual(['-a', '-b']);
  });
  it('finds the common lines between insertions', () => {
    expect(show(lineDiff('a\nb\nc\nd', 'a\nx\nb\nd\ny'))).toEqual([' a', '+x', ' b', '-c', ' d', '+y']);
  });
  it('counts what it adds and removes', () => {
    expect(diffStat(lineDiff('a\nb\nc', 'a\nB\nc\nd'))).toEqual({ added: 2, removed: 1 });
  });
  it('gives up on the table for huge inputs but still shows every line', () => {
    const before = Array.from({ length: 3000 }, (_, i) => `old ${i}`).join('\n');
    const after = Array.from({ length: 3000 }, (_, i) => `new ${i}`).join('\n');
    const d = lineDiff(before, after);
    expect(diffStat(d)).toEqual({ added: 3000, removed: 3000 });
  });
});

describe('hunks', () => {
  it('folds long unchanged runs and keeps context around changes', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const after = before.replace('l10', 'L10');
    expect(show(hunks(lineDiff(before, after), 2))).toEqual(['~8 unchanged lines', ' l8', ' l9', '-l10', '+L10', ' l11', ' l12', '~7 unchanged lines']);
  });
  it('leaves a short file whole', () => {
    expect(show(hunks(lineDiff('a\nb', 'a\nc')))).toEqual([' a', '-b', '+c']);
  });
});
