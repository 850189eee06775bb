import { describe, expect, it } from 'vitest';
import { covers, grow, settle } from './span';

const s = (start: number, end: number) => ({ start, end });

describe('settle', () => {
  it('renders what is in view at once, and keeps rendered rows still within the margin', () => {
    // Scrolled down by two rows: the rows kept are 12..30, the view is 20..30.
    expect(settle(s(10, 30), s(12, 40), s(20, 30))).toEqual(s(12, 30));
  });

  it('adds the rows that came into view', () => {
    expect(settle(s(10, 30), s(15, 45), s(25, 35))).toEqual(s(15, 35));
  });

  it('drops what it had after a jump that leaves none of it near the view', () => {
    expect(settle(s(0, 20), s(480, 520), s(495, 505))).toEqual(s(495, 505));
  });

  it('keeps rows that end right where the view begins', () => {
    expect(settle(s(0, 20), s(5, 40), s(20, 30))).toEqual(s(5, 30));
  });

  it('drops rows past the end of a list that got shorter', () => {
    expect(settle(s(0, 50), s(0, 8), s(0, 8))).toEqual(s(0, 8));
  });

  it('renders nothing for an empty list', () => {
    expect(settle(s(3, 9), s(0, 0), s(0, 0))).toEqual(s(0, 0));
  });
});

describe('grow', () => {
  it('grows ahead of the scroll first', () => {
    expect(grow(s(10, 20), s(5, 30), 3, true)).toEqual(s(10, 23));
    expect(grow(s(10, 20), s(5, 30), 3, false)).toEqual(s(7, 20));
  });

  it('grows behind once ahead is full', () => {
    expect(grow(s(10, 29), s(5, 30), 3, true)).toEqual(s(8, 30));
  });

  it('never grows past what is wanted', () => {
    expect(grow(s(5, 30), s(5, 30), 3, true)).toEqual(s(5, 30));
    expect(grow(s(6, 30), s(5, 30), 99, false)).toEqual(s(5, 30));
  });

  it('reaches what is wanted a few rows at a time', () => {
    let have = s(40, 50);
    const want = s(30, 70);
    let steps = 0;
    while (!covers(have, want)) {
      have = grow(have, want, 4, true);
      steps++;
    }
    expect(steps).toBe(8);
    expect(have).toEqual(want);
  });
});

describe('covers', () => {
  it('says whether one run holds another', () => {
    expect(covers(s(0, 10), s(2, 8))).toBe(true);
    expect(covers(s(0, 10), s(0, 10))).toBe(true);
    expect(covers(s(2, 10), s(0, 8))).toBe(false);
    expect(covers(s(0, 7), s(2, 8))).toBe(false);
  });
});
