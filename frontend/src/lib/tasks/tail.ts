/** About how much of a task's output a card keeps in memory. */
export const tailLimit = 64 * 1024;

/**
 * Keeps the end of text within limit characters, cutting at a line start when
 * one is near so the first line shown is whole. Reports whether it cut.
 */
export function keepTail(text: string, limit = tailLimit): { text: string; cut: boolean } {
  if (text.length <= limit) return { text, cut: false };
  let start = text.length - limit;
  const nl = text.indexOf('\n', start);
  if (nl !== -1 && nl - start < 1024) start = nl + 1;
  return { text: text.slice(start), cut: true };
}
