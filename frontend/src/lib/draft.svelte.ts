/**
 * Draft is what is written in the composers, shared so the ⌘K palette can
 * tell whether there is something to send and the global shortcut can send
 * it: `text` in the tasks page's, `chat` in the chat page's.
 */
export class Draft {
  text = $state('');
  chat = $state('');

  /** True when something other than white space is written in the tasks page's composer. */
  get written(): boolean {
    return this.text.trim() !== '';
  }

  /** True when something other than white space is written in the chat composer. */
  get chatWritten(): boolean {
    return this.chat.trim() !== '';
  }
}
