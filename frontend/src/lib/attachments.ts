// Tasks and chats take text only for now (SPEC §3): what the composer says
// when something else is pasted or dropped on it, instead of dropping it
// without a word.

/** What a paste or a drop carries, as the composer sees it. */
export interface Carried {
  /** The data transfer's types ("text/plain", "Files", "image/png"). */
  types: readonly string[];
  /** The names of the files in it, if any. */
  files: readonly string[];
}

/** True when what is carried holds something other than text: files, images. */
export function hasAttachment(c: Carried): boolean {
  return c.files.length > 0 || c.types.some((t) => t === 'Files' || t.startsWith('image/'));
}

/** True when it also holds plain text, which the text box takes as usual. */
export function hasText(c: Carried): boolean {
  return c.types.includes('text/plain');
}

/**
 * The sentence the composer says for it, naming what was left out:
 * "Tasks and chats don't take attachments yet, so report.pdf was not
 * added. Paste its text, or give its path in the message." ('' for text).
 */
export function attachmentNotice(c: Carried): string {
  if (!hasAttachment(c)) return '';
  const names = c.files.filter((n) => n.trim() !== '');
  const what =
    names.length === 0 ? 'it was' : names.length === 1 ? `${names[0]} was` : names.length === 2 ? `${names[0]} and ${names[1]} were` : `${names[0]} and ${names.length - 1} other files were`;
  return `Tasks and chats don't take attachments yet, so ${what} not added. Paste the text, or give the file's path in the message.`;
}

/** What a DataTransfer carries (null when the event has none). */
export function carried(dt: DataTransfer | null): Carried {
  if (!dt) return { types: [], files: [] };
  return { types: [...dt.types], files: [...dt.files].map((f) => f.name) };
}
