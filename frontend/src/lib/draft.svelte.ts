/**
 * Draft is what is written in the composer, shared so the ⌘K palette can
 * tell whether there is something to send and the global shortcut can send it.
 */
export class Draft {
  text = $state('');

  /** True when something other than white space is written. */
  get written(): boolean {
    return this.text.trim() !== '';
  }
}
