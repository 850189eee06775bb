/**
 * Clock is one shared "now" that ticks on each second boundary, so every
 * elapsed time on the page changes together and only one timer runs.
 */
export class Clock {
  now = $state(Date.now());
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Starts ticking; returns the function that stops it. */
  start(): () => void {
    const tick = (): void => {
      this.now = Date.now();
      this.#timer = setTimeout(tick, 1000 - (this.now % 1000) + 5);
    };
    tick();
    return () => {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
    };
  }
}
