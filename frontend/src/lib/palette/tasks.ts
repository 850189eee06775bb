// Which tasks and chats the ⌘K palette matches against. Every task that is not
// finished is loaded; of the finished ones only the pages scrolled so far
// are, so a search by title also asks the server, and its answer joins
// the newest loaded ones.

import type { Conversation, Task } from '../backend/contract';

/** How many of the newest loaded finished tasks the palette looks through besides the server's answer. */
export const loadedFinished = 200;

/**
 * The tasks the palette matches a query against, each once: the active
 * ones, then the server's finds (newest first), then the newest finished
 * ones loaded. live gives the newest copy the store holds of each.
 */
export function paletteTasks(active: readonly Task[], found: readonly Task[], finished: readonly Task[], live: (id: string) => Task | undefined): Task[] {
  return onceEach([active, found, finished.slice(0, loadedFinished)], live);
}

/**
 * The chats the palette matches a query against, each once: those the
 * sidebar holds, then the server's finds of older ones.
 */
export function paletteChats(held: readonly Conversation[], found: readonly Conversation[], live: (id: string) => Conversation | undefined): Conversation[] {
  return onceEach([held, found], live);
}

/** The items of lists in order, each id once, as its newest copy (live) when there is one. */
function onceEach<T extends { id: string }>(lists: readonly (readonly T[])[], live: (id: string) => T | undefined): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const list of lists) {
    for (const x of list) {
      if (seen.has(x.id)) continue;
      seen.add(x.id);
      out.push(live(x.id) ?? x);
    }
  }
  return out;
}
