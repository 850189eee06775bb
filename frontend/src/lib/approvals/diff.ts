// A line diff for a question about a file write: what the file holds and
// what it would hold, as the lines an ask shows (removed, added and a few
// unchanged around them). Pure; an LCS over lines, bounded so a huge file
// cannot stall the page.

/** One line of a diff. */
export interface DiffLine {
  kind: 'same' | 'add' | 'del' | 'gap';
  text: string;
}

/** Lines beyond which the diff stops looking for common lines and shows the whole replacement. */
const maxCells = 4_000_000;

function lines(s: string): string[] {
  if (s === '') return [];
  const l = s.split('\n');
  if (l[l.length - 1] === '') l.pop();
  return l;
}

/** Every line of before and after, each marked kept, removed or added, in order. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = lines(before);
  const b = lines(after);
  // Common start and end need no table.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const out: DiffLine[] = a.slice(0, start).map((text) => ({ kind: 'same', text }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  if (n * m > maxCells) {
    for (const text of midA) out.push({ kind: 'del', text });
    for (const text of midB) out.push({ kind: 'add', text });
  } else {
    // len[i][j]: the longest common run of midA[i:] and midB[j:].
    const len: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      const row = len[i] as Uint32Array;
      const next = len[i + 1] as Uint32Array;
      for (let j = m - 1; j >= 0; j--) row[j] = midA[i] === midB[j] ? (next[j + 1] ?? 0) + 1 : Math.max(next[j] ?? 0, row[j + 1] ?? 0);
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        out.push({ kind: 'same', text: midA[i++] ?? '' });
        j++;
      } else if (i < n && (j === m || (len[i + 1]?.[j] ?? 0) >= (len[i]?.[j + 1] ?? 0))) {
        // Removed lines before added ones, as diffs read.
        out.push({ kind: 'del', text: midA[i++] ?? '' });
      } else {
        out.push({ kind: 'add', text: midB[j++] ?? '' });
      }
    }
  }
  for (const text of a.slice(endA)) out.push({ kind: 'same', text });
  return out;
}

/**
 * The lines an ask shows: every change with context unchanged lines around
 * it; longer unchanged runs fold into one 'gap' line ("12 unchanged lines").
 */
export function hunks(diff: readonly DiffLine[], context = 3): DiffLine[] {
  const keep = diff.map(() => false);
  diff.forEach((l, i) => {
    if (l.kind === 'same') return;
    for (let k = Math.max(0, i - context); k <= Math.min(diff.length - 1, i + context); k++) keep[k] = true;
  });
  const out: DiffLine[] = [];
  let skipped = 0;
  const flush = (): void => {
    if (skipped > 0) out.push({ kind: 'gap', text: skipped === 1 ? '1 unchanged line' : `${skipped} unchanged lines` });
    skipped = 0;
  };
  diff.forEach((l, i) => {
    if (keep[i]) {
      flush();
      out.push(l);
    } else skipped++;
  });
  flush();
  return out;
}

/** How much a diff adds and removes: "+3 −1". */
export function diffStat(diff: readonly DiffLine[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of diff) {
    if (l.kind === 'add') added++;
    else if (l.kind === 'del') removed++;
  }
  return { added, removed };
}
