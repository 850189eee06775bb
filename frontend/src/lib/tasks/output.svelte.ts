import type { Backend } from '../backend/backend';
import { toApiError } from '../backend/error';
import { keepTail, tailLimit } from './tail';

/**
 * OutputTail follows the end of one task's output log: sync(outputBytes) reads
 * whatever was added since the last read, keeping about tailLimit characters.
 */
export class OutputTail {
  /** The kept end of the output. */
  text = $state('');
  /** True when earlier output exists that is not kept. */
  cut = $state(false);
  /** One sentence when the last read failed. */
  error = $state('');

  readonly #backend: Backend;
  readonly #id: string;
  #offset = -1;
  #want = 0;
  #busy = false;
  /** The most the log was announced to hold in this run (task.output), ahead of the record. */
  #ahead = 0;

  constructor(backend: Backend, id: string) {
    this.#backend = backend;
    this.#id = id;
  }

  /** Reads up to outputBytes (the task's current log size) if there is more. */
  sync(outputBytes: number): void {
    if (this.#offset > outputBytes && this.#offset > this.#ahead) this.#restart();
    if (outputBytes <= this.#want && this.#offset !== -1) {
      void this.#pump(); // a record behind what was announced: nothing new
      return;
    }
    this.#want = outputBytes;
    if (this.#offset === -1) {
      this.#offset = Math.max(0, outputBytes - tailLimit);
      this.cut = this.#offset > 0;
    }
    void this.#pump();
  }

  /**
   * The log has grown to n, as announced while its task runs (task.output):
   * read it now, not at the record's next save. A shown tail only; the
   * first sync places one.
   */
  grew(n: number): void {
    if (n < this.#ahead) {
      // Announcements grow within a run: a smaller one is a log that started over.
      this.#ahead = 0;
      if (this.#offset > n) this.#restart();
    }
    this.#ahead = n;
    if (this.#offset === -1 || n <= this.#want) return;
    this.#want = n;
    void this.#pump();
  }

  /** The log started over (a retried task): show the new one from the top. */
  #restart(): void {
    this.#offset = -1;
    this.#want = 0;
    this.text = '';
    this.cut = false;
  }

  async #pump(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      while (this.#offset < this.#want) {
        const from = this.#offset;
        const chunk = await this.#backend.readOutput(this.#id, from);
        if (this.#offset !== from) continue; // reset while reading
        if (chunk.next <= from) break; // nothing more yet
        this.#offset = chunk.next;
        if (chunk.data !== '') {
          const kept = keepTail(this.text + chunk.data);
          this.text = kept.text;
          if (kept.cut) this.cut = true;
        }
      }
      this.error = '';
    } catch (e) {
      this.error = `Couldn't read the output: ${toApiError(e).message}`;
    } finally {
      this.#busy = false;
    }
  }
}
