import type { Backend } from './backend/backend';
import { shortPath, shortPathsIn } from './tasks/paths';

/**
 * HomeFolder is the person's home folder on the computer Conch runs on, as
 * the server says it (GET /api/about): a page in a browser cannot learn
 * it, and guessing from the path (/home/<anyone>) would write another
 * person's home as ~. Until it is known every folder shows in full.
 */
export class HomeFolder {
  /** The home folder, '' while not known. */
  path = $state('');

  readonly #backend: Backend;
  #asking: Promise<void> | null = null;

  constructor(backend: Backend) {
    this.#backend = backend;
  }

  /**
   * Asks the server (at start, and again when the stream reconnects: it
   * may be another server now); joins a question in flight. A question that
   * fails keeps what was known.
   */
  load(): Promise<void> {
    this.#asking ??= (async () => {
      try {
        this.path = (await this.#backend.about()).userHome ?? '';
      } catch {
        // Paths keep reading as they did; the next reconnect asks again.
      } finally {
        this.#asking = null;
      }
    })();
    return this.#asking;
  }

  /** A folder as every surface shows it (see shortPath): ~/projects/site. */
  short(p: string): string {
    return shortPath(p, this.path);
  }

  /** A sentence from the server with each path in it written as short does (the doctor's "Database: ~/.conch/conch.db"). */
  shortIn(text: string): string {
    return shortPathsIn(text, this.path);
  }
}
