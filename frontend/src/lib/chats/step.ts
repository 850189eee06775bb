// What an opened step shows of a tool call's arguments: one labelled row per
// argument, in words, instead of the raw JSON.

/** One argument of a tool call as the step shows it. */
export interface ArgRow {
  /** The argument's name in words ("Old text" for old_string). */
  label: string;
  /** Its value as text: strings as they are, anything else as compact JSON. */
  value: string;
  /** True when the value is long or spans lines, so it shows as a block under its label. */
  block: boolean;
  /** True when the value reads best in the monospace font (paths, commands, code). */
  mono: boolean;
}

const words: Record<string, string> = {
  cmd: 'Command',
  cwd: 'Folder',
  dir: 'Folder',
  old_string: 'Old text',
  new_string: 'New text',
  old_str: 'Old text',
  new_str: 'New text',
  url: 'URL',
  file_path: 'File',
  path: 'Path',
};

/** A key like "file_path", "maxBytes" or "timeout-ms" in words: "File path", "Max bytes", "Timeout ms". */
export function argLabel(key: string): string {
  const known = words[key];
  if (known) return known;
  const spaced = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
  return spaced === '' ? key : spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

const prose = new Set(['description', 'reason', 'title', 'instructions', 'summary', 'message', 'text', 'prompt', 'query', 'question']);

/** The rows an opened step shows for a tool call's arguments; none for no arguments. */
export function argRows(args: unknown): ArgRow[] {
  if (args === null || args === undefined) return [];
  if (typeof args !== 'object' || Array.isArray(args)) {
    const value = typeof args === 'string' ? args : JSON.stringify(args, null, 2);
    return value === '' ? [] : [{ label: 'Input', value, block: true, mono: true }];
  }
  const rows: ArgRow[] = [];
  for (const [key, v] of Object.entries(args as Record<string, unknown>)) {
    if (v === null || v === undefined || v === '') continue;
    const value = typeof v === 'string' ? v : JSON.stringify(v, null, typeof v === 'object' ? 2 : undefined);
    const block = value.includes('\n') || value.length > 80;
    rows.push({ label: argLabel(key), value, block, mono: !prose.has(key.toLowerCase()) });
  }
  return rows;
}
