/** A run of rows by index: start is the first, end the one after the last. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/**
 * The rows a list renders now: every row of must (what is in view), and
 * of the rows it had (have) those still within want (the view and its
 * margin). When what it had no longer touches what is in view (a jump),
 * only the rows in view.
 */
export function settle(have: Span, want: Span, must: Span): Span {
  const start = Math.max(have.start, want.start);
  const end = Math.min(have.end, want.end);
  if (start >= end || end < must.start || start > must.end) return { start: must.start, end: must.end };
  return { start: Math.min(start, must.start), end: Math.max(end, must.end) };
}

/**
 * have grown toward want by at most n rows, on the side the person
 * scrolls toward first (down: the end), then on the other.
 */
export function grow(have: Span, want: Span, n: number, down: boolean): Span {
  let { start, end } = have;
  let left = n;
  const ahead = (): void => {
    const k = Math.min(left, Math.max(0, want.end - end));
    end += k;
    left -= k;
  };
  const behind = (): void => {
    const k = Math.min(left, Math.max(0, start - want.start));
    start -= k;
    left -= k;
  };
  if (down) {
    ahead();
    behind();
  } else {
    behind();
    ahead();
  }
  return { start, end };
}

/** Whether a holds every row of b. */
export function covers(a: Span, b: Span): boolean {
  return a.start <= b.start && a.end >= b.end;
}

/**
 * The height of each of items: a row that the last count (last, with its
 * heights) had at the start or at the end keeps its height (a task that
 * lands at the top moves the rest down one), and only the rows between are
 * counted (height). last is null when a measurement changed since.
 */
export function heightsOf<T>(items: readonly T[], last: { items: readonly T[]; heights: Float64Array } | null, height: (item: T) => number): Float64Array {
  const n = items.length;
  const h = new Float64Array(n);
  let from = 0;
  let to = n;
  if (last) {
    const m = last.items.length;
    while (from < n && from < m && items[from] === last.items[from]) {
      h[from] = last.heights[from] ?? 0;
      from++;
    }
    // The same row of the last count, as far from its end.
    const old = (i: number): number => m - (n - i);
    while (to > from && old(to) > from && items[to - 1] === last.items[old(to) - 1]) {
      h[to - 1] = last.heights[old(to) - 1] ?? 0;
      to--;
    }
  }
  for (let i = from; i < to; i++) h[i] = height(items[i] as T);
  return h;
}
