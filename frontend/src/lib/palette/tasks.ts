// Which tasks the ⌘K palette matches against. Every task that is not
// finished is loaded; of the finished ones only the pages scrolled so far
// are, so a search by title also asks the server, and its answer joins
// the newest loaded ones.

import type { Task } from '../backend/contract';

/** How many of the newest loaded finished tasks the palette looks through besides the server's answer. */
export const loadedFinished = 200;

/**
 * The tasks the palette matches a query against, each once: the active
 * ones, then the server's finds (newest first), then the newest finished
 * ones loaded. live gives the newest copy the store holds of each.
 */
export function paletteTasks(active: readonly Task[], found: readonly Task[], finished: readonly Task[], live: (id: string) => Task | undefined): Task[] {
  const seen = new Set<string>();
  const out: Task[] = [];
  const add = (t: Task) => {
    if (seen.has(t.id)) return;
    seen.add(t.id);
    out.push(live(t.id) ?? t);
  };
  for (const t of active) add(t);
  for (const t of found) add(t);
  for (const t of finished.slice(0, loadedFinished)) add(t);
  return out;
}
