// A small fuzzy matcher for the ⌘K palette: the query's characters must
// appear in order in the text; matches at word starts and in runs score
// higher, gaps and long texts lower.

/** How a text matched a query: higher score is better; positions are the matched indices, for highlighting. */
export interface Match {
  score: number;
  positions: number[];
}

const bonus = {
  /** The first character of the text. */
  start: 8,
  /** The start of a word (after a space, a separator, or a lower-to-upper change). */
  word: 6,
  /** Right after the previous match. */
  run: 5,
  /** Same case as typed, when the query has capitals. */
  exactCase: 1,
};
const penalty = {
  /** Per skipped character between two matches (capped). */
  gap: 1,
  gapMax: 4,
  /** Per character of the text beyond the query, so shorter texts win ties. */
  length: 0.02,
};

const separators = new Set([' ', '-', '_', '/', '.', ':', '·', '(', ')', '`', '"', "'", ',', ';']);

function isWordStart(text: string, i: number): boolean {
  if (i === 0) return true;
  const prev = text.charAt(i - 1);
  if (separators.has(prev)) return true;
  const c = text.charAt(i);
  return prev === prev.toLowerCase() && c !== c.toLowerCase() && c === c.toUpperCase();
}

/**
 * Scores text against query, or returns null when the query's characters do
 * not all appear in order. An empty query (after trimming) matches everything
 * with score 0. Whitespace in the query is ignored.
 *
 * The search is greedy from each possible first character, preferring word
 * starts; texts are short (titles, page names), so this is fast enough.
 */
export function fuzzyMatch(query: string, text: string): Match | null {
  const q = query.replace(/\s+/g, '');
  if (q === '') return { score: 0, positions: [] };
  const ql = q.toLowerCase();
  const tl = text.toLowerCase();
  if (ql.length > tl.length) return null;
  const caseMatters = q !== ql;

  let best: Match | null = null;
  // Try starting at every occurrence of the first character, and from each
  // both the earliest matches and the ones that prefer word starts; keep the
  // best score.
  for (let start = tl.indexOf(ql.charAt(0)); start !== -1; start = tl.indexOf(ql.charAt(0), start + 1)) {
    const earliest = place(ql, text, tl, start, false);
    // The earliest placement fits whenever any does: if it fails here, it fails from every later start.
    if (earliest === null) break;
    for (const positions of [earliest, place(ql, text, tl, start, true)]) {
      if (positions === null) continue;
      const score = scoreOf(q, text, positions, caseMatters);
      if (best === null || score > best.score) best = { score, positions };
    }
  }
  return best;
}

/**
 * Places the query's characters after the first one at start: each at its
 * earliest occurrence, or (preferWords) right after the previous match, else
 * at the next word start holding it, else at its earliest occurrence.
 */
function place(ql: string, text: string, tl: string, start: number, preferWords: boolean): number[] | null {
  const positions = [start];
  let ti = start + 1;
  for (let qi = 1; qi < ql.length; qi++) {
    const c = ql.charAt(qi);
    let at = -1;
    if (preferWords && tl.charAt(ti) !== c) {
      for (let j = ti; j < tl.length; j++) {
        if (tl.charAt(j) === c && isWordStart(text, j)) {
          at = j;
          break;
        }
      }
    }
    if (at === -1) at = tl.indexOf(c, ti);
    if (at === -1) return null;
    positions.push(at);
    ti = at + 1;
  }
  return positions;
}

function scoreOf(q: string, text: string, positions: number[], caseMatters: boolean): number {
  let score = 0;
  positions.forEach((p, i) => {
    score += 1;
    if (p === 0) score += bonus.start;
    else if (isWordStart(text, p)) score += bonus.word;
    const prev = positions[i - 1];
    if (prev !== undefined) {
      if (p === prev + 1) score += bonus.run;
      else score -= Math.min(penalty.gapMax, (p - prev - 1) * penalty.gap);
    }
    if (caseMatters && text.charAt(p) === q.charAt(i)) score += bonus.exactCase;
  });
  score -= (text.length - q.length) * penalty.length;
  return score;
}

/**
 * Filters and orders items by how well label(item) matches query; equal
 * scores keep the given order. An empty query keeps every item in order.
 */
export function fuzzyFilter<T>(items: readonly T[], query: string, label: (item: T) => string): { item: T; match: Match }[] {
  const out: { item: T; match: Match; i: number }[] = [];
  items.forEach((item, i) => {
    const match = fuzzyMatch(query, label(item));
    if (match) out.push({ item, match, i });
  });
  if (query.trim() !== '') out.sort((a, b) => b.match.score - a.match.score || a.i - b.i);
  return out.map(({ item, match }) => ({ item, match }));
}

/** Splits text into runs of matched and unmatched characters, for highlighting. */
export function highlight(text: string, positions: readonly number[]): { text: string; hit: boolean }[] {
  const hits = new Set(positions);
  const parts: { text: string; hit: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const hit = hits.has(i);
    const last = parts[parts.length - 1];
    if (last && last.hit === hit) last.text += text.charAt(i);
    else parts.push({ text: text.charAt(i), hit });
  }
  return parts;
}
