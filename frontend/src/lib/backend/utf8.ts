// Output is read in byte ranges, so a range can start or end inside a UTF-8
// sequence. These helpers find the whole characters in a range.

/** Number of leading continuation bytes (10xxxxxx) to skip so the range starts on a character. */
export function leadingPartial(b: Uint8Array): number {
  let i = 0;
  while (i < b.length && i < 3 && ((b[i] ?? 0) & 0xc0) === 0x80) i++;
  return i;
}

/** Number of trailing bytes that begin a character the range does not finish. */
export function trailingPartial(b: Uint8Array): number {
  const n = b.length;
  // Walk back over at most 3 continuation bytes to the lead byte.
  for (let back = 1; back <= Math.min(4, n); back++) {
    const c = b[n - back] ?? 0;
    if ((c & 0xc0) === 0x80) continue; // continuation: keep looking for its lead
    const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}
