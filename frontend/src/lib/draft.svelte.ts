import { SvelteMap } from 'svelte/reactivity';

/**
 * Draft is what is written in the composers, shared so the ⌘K palette can
 * tell whether there is something to send and the global shortcut can send
 * it: `text` in the tasks page's, `chat` in the open chat's. Each chat keeps
 * its own draft (a new, unsent chat is the key ''), so text written in one
 * chat never shows up in another's composer.
 */
export class Draft {
  text = $state('');
  readonly #chats = new SvelteMap<string, string>();
  readonly #open: () => string;

  /** open names the chat whose composer is shown ('' for a new chat). */
  constructor(open: () => string = () => '') {
    this.#open = open;
  }

  /** The open chat's key, to clear its draft after a send that moved elsewhere. */
  get chatKey(): string {
    return this.#open();
  }

  /** What is written in the open chat's composer. */
  get chat(): string {
    return this.#chats.get(this.#open()) ?? '';
  }

  set chat(v: string) {
    this.set(this.#open(), v);
  }

  /** The draft of chat id ('' for a new chat). */
  of(id: string): string {
    return this.#chats.get(id) ?? '';
  }

  /** Sets chat id's draft; an empty one is forgotten. */
  set(id: string, v: string): void {
    if (v === '') this.#chats.delete(id);
    else this.#chats.set(id, v);
  }

  /** True when something other than white space is written in the tasks page's composer. */
  get written(): boolean {
    return this.text.trim() !== '';
  }

  /** True when something other than white space is written in the open chat's composer. */
  get chatWritten(): boolean {
    return this.chat.trim() !== '';
  }
}
