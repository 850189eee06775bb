import { describe, expect, it } from 'vitest';
import { covers, grow, heightsOf, settle } from './span';

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

describe('heightsOf', () => {
  // Rows are objects; a row's height is its size, and each count is recorded.
  const row = (size: number) => ({ size });
  const counting = () => {
    const asked: number[] = [];
    return { asked, height: (r: { size: number }) => (asked.push(r.size), r.size) };
  };

  it('counts only the rows the last count did not have at its start or end', () => {
    const [a, b, c, d] = [row(10), row(20), row(30), row(40)];
    const first = counting();
    const h1 = heightsOf([a, b, c], null, first.height);
    expect([...h1]).toEqual([10, 20, 30]);
    expect(first.asked).toEqual([10, 20, 30]);
    // A row lands at the top: the rest move down one and keep their heights.
    const top = counting();
    expect([...heightsOf([d, a, b, c], { items: [a, b, c], heights: h1 }, top.height)]).toEqual([40, 10, 20, 30]);
    expect(top.asked).toEqual([40]);
    // One row in the middle is replaced (a card opened).
    const [b2] = [row(25)];
    const mid = counting();
    expect([...heightsOf([a, b2, c], { items: [a, b, c], heights: Float64Array.from([10, 20, 30]) }, mid.height)]).toEqual([10, 25, 30]);
    expect(mid.asked).toEqual([25]);
    // A row leaves the end, and one is the last count's twice: no row is taken from the wrong place.
    const end = counting();
    expect([...heightsOf([a, b], { items: [a, b, c], heights: h1 }, end.height)]).toEqual([10, 20]);
    expect(end.asked).toEqual([]);
    const twice = counting();
    expect([...heightsOf([a, a], { items: [a], heights: Float64Array.from([99]) }, twice.height)]).toEqual([99, 10]);
    expect(twice.asked).toEqual([10]);
  });
});
