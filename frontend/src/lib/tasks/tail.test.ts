import { describe, expect, it } from 'vitest';
import { keepTail } from './tail';

describe('keepTail', () => {
  it('keeps short text whole', () => {
    expect(keepTail('abc\n', 10)).toEqual({ text: 'abc\n', cut: false });
  });

  it('keeps the end, starting at a whole line', () => {
    expect(keepTail('line one\nline two\nthree\n', 12)).toEqual({ text: 'three\n', cut: true });
  });

  it('cuts mid-line when there is no newline near', () => {
    const r = keepTail('x'.repeat(5000), 100);
    expect(r.text.length).toBe(100);
    expect(r.cut).toBe(true);
  });
});
