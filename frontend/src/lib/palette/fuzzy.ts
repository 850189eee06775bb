// The ⌘K palette's matcher. A query is words; every word must be found in
// the text as the start of one of its words ("sta" in "Check the staging
// plan"), as the initials of words in a row ("dib" for "Do it in the
// background"), or, from three letters on, inside a word ("port" in
// "Import the data"). Letters scattered across the text never match:
// "test" does not find "Check the staging plan". Prefixes score highest,
// the text's own start higher still, and shorter texts win ties.

/** How a text matched a query: higher score is better; positions are the matched indices, for highlighting. */
export interface Match {
  score: number;
  positions: number[];
}

const score = {
  /** A query word that starts the text. */
  start: 6,
  /** Per letter of a query word found at a word start. */
  prefix: 4,
  /** Per letter of a query word found as initials. */
  initials: 2,
  /** Per letter of a query word found inside a word. */
  inside: 1,
  /** Per character of the text beyond the query, so shorter texts win ties. */
  length: 0.02,
};

/** The shortest query word that may match inside a word. */
const insideFrom = 3;

const separators = new Set([' ', '-', '_', '/', '.', ':', '·', '(', ')', '`', '"', "'", ',', ';', '[', ']', '|', '\t']);

function isWordStart(text: string, i: number): boolean {
  const c = text.charAt(i);
  if (separators.has(c)) return false;
  if (i === 0) return true;
  const prev = text.charAt(i - 1);
  if (separators.has(prev)) return true;
  // camelCase, and a digit after letters or letters after digits.
  if (prev === prev.toLowerCase() && c !== c.toLowerCase() && c === c.toUpperCase()) return true;
  return /\d/.test(prev) !== /\d/.test(c);
}

/** The best way one query word (lower case) matches text, or null. */
function matchWord(w: string, text: string, tl: string, taken: ReadonlySet<number>): Match | null {
  const free = (from: number, n: number): boolean => {
    for (let k = from; k < from + n; k++) if (taken.has(k)) return false;
    return true;
  };
  const run = (from: number, n: number): number[] => Array.from({ length: n }, (_, k) => from + k);
  // At a word start.
  for (let i = tl.indexOf(w); i !== -1; i = tl.indexOf(w, i + 1)) {
    if (isWordStart(text, i) && free(i, w.length)) return { score: w.length * score.prefix + (i === 0 ? score.start : 0), positions: run(i, w.length) };
  }
  // As the initials of words in a row.
  if (w.length >= 2) {
    const starts: number[] = [];
    for (let i = 0; i < text.length; i++) if (isWordStart(text, i)) starts.push(i);
    for (let s = 0; s + w.length <= starts.length; s++) {
      const at = starts.slice(s, s + w.length);
      if (at.every((p, k) => tl.charAt(p) === w.charAt(k) && !taken.has(p))) return { score: w.length * score.initials + (at[0] === 0 ? score.start : 0), positions: at };
    }
  }
  // Inside a word.
  if (w.length >= insideFrom) {
    for (let i = tl.indexOf(w); i !== -1; i = tl.indexOf(w, i + 1)) {
      if (free(i, w.length)) return { score: w.length * score.inside, positions: run(i, w.length) };
    }
  }
  return null;
}

/**
 * Scores text against query, or returns null when a word of the query is
 * not found. An empty query (after trimming) matches everything with score 0.
 */
export function fuzzyMatch(query: string, text: string): Match | null {
  const words = query.toLowerCase().split(/\s+/).filter((w) => w !== '');
  if (words.length === 0) return { score: 0, positions: [] };
  const tl = text.toLowerCase();
  // Longer words first, so a short one cannot take the letters a long one needs.
  const order = [...words].sort((a, b) => b.length - a.length);
  const taken = new Set<number>();
  let total = 0;
  for (const w of order) {
    const m = matchWord(w, text, tl, taken);
    if (!m) return null;
    total += m.score;
    for (const p of m.positions) taken.add(p);
  }
  const typed = words.join('').length;
  return { score: total - Math.max(0, text.length - typed) * score.length, positions: [...taken].sort((a, b) => a - b) };
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
