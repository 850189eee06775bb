// Files two helpers of one group both changed: the pure rules of the line a
// helper's card shows before the person merges ("Both 'Fix the bug' and
// 'Write the tests' changed src/app.ts."), the same sentence the merged
// result ends with.

import type { Overlap } from '../backend/contract';

/** How many files one sentence names before it counts the rest. */
const maxFiles = 5;

/**
 * The card's sentences for a helper's overlaps: one for each set of other
 * helpers, in the order they first appear, with the files as `code`.
 * titleOf gives another helper's title (undefined when it is not known).
 */
export function overlapLines(title: string, overlap: Overlap[] | null | undefined, titleOf: (id: string) => string | undefined): string[] {
  const sets = new Map<string, { with: string[]; files: string[] }>();
  for (const o of overlap ?? []) {
    const others = o.with ?? [];
    if (others.length === 0) continue;
    const key = others.join('\u0000');
    const s = sets.get(key) ?? { with: others, files: [] };
    if (!s.files.includes(o.file)) s.files.push(o.file);
    sets.set(key, s);
  }
  return [...sets.values()].map((s) => sentence([title, ...s.with.map((id) => titleOf(id) ?? 'another helper')], [...s.files].sort()));
}

/** "Both 'A' and 'B' changed `x`." / "'A', 'B' and 'C' all changed `x` and `y`." */
export function sentence(titles: string[], files: string[]): string {
  const names = titles.map((t) => `'${(t.trim() || 'another helper').replaceAll('`', '')}'`);
  const who =
    names.length < 2
      ? names.join('')
      : names.length === 2
        ? `Both ${names[0]} and ${names[1]}`
        : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} all`;
  const code = files.map((f) => `\`${f.replaceAll('`', '')}\``);
  let list: string;
  if (code.length > maxFiles) list = `${code.slice(0, maxFiles - 1).join(', ')} and ${code.length - (maxFiles - 1)} more files`;
  else if (code.length === 1) list = code[0] ?? '';
  else list = `${code.slice(0, -1).join(', ')} and ${code.at(-1)}`;
  return `${who} changed ${list}.`;
}
