/** Runs f soon: the store's live events are applied together when it does. */
export type Scheduler = (f: () => void) => void;

/** What a scheduler needs of the page: its frames, a timer, a clock, and whether it shows. */
export interface Frames {
  frame(f: () => void): void;
  after(ms: number, f: () => void): void;
  now(): number;
  visible(): boolean;
}

/**
 * How long a flood of changes waits between two applications: ten times a
 * second is quicker than anyone reads a card, and spares the page a layout
 * and a paint on every frame while a hundred tasks a second change.
 */
export const floodGapMs = 100;

/**
 * floodScheduler runs f at the next frame, but never sooner than gapMs
 * after it last ran: a lone change shows at the next frame, while a steady
 * stream of them is applied once every gapMs. A hidden page has no frames;
 * it is brought up to date every gapMs.
 */
export function floodScheduler(page: Frames, gapMs = floodGapMs): Scheduler {
  let last = Number.NEGATIVE_INFINITY;
  return (f) => {
    const run = (): void => {
      last = page.now();
      f();
    };
    if (!page.visible()) {
      page.after(gapMs, run);
      return;
    }
    const wait = last + gapMs - page.now();
    if (wait > 0) page.after(wait, () => page.frame(run));
    else page.frame(run);
  };
}

/** The browser's frames and timers. */
export const browserFrames: Frames = {
  frame: (f) => requestAnimationFrame(() => f()),
  after: (ms, f) => void setTimeout(f, ms),
  now: () => performance.now(),
  visible: () => typeof requestAnimationFrame === 'function' && typeof document !== 'undefined' && !document.hidden,
};
