import { describe, expect, it } from 'vitest';
import { floodScheduler, type Frames } from './schedule';

/** A page whose frames and timers run only when the test says, on a clock it moves. */
function page(visible = true) {
  let now = 0;
  let queued: (() => void)[] = [];
  let timers: { at: number; f: () => void }[] = [];
  const frames: Frames = {
    frame: (f) => void queued.push(f),
    after: (ms, f) => void timers.push({ at: now + ms, f }),
    now: () => now,
    visible: () => visible,
  };
  return {
    frames,
    /** Moves the clock to t, running the timers due by then. */
    to(t: number) {
      now = t;
      const due = timers.filter((x) => x.at <= t);
      timers = timers.filter((x) => x.at > t);
      for (const x of due) x.f();
    },
    /** Runs the frame asked for. */
    frame() {
      const fs = queued;
      queued = [];
      for (const f of fs) f();
    },
    waiting: () => ({ frames: queued.length, timers: timers.map((x) => x.at) }),
  };
}

describe('floodScheduler', () => {
  it('runs a lone change at the next frame', () => {
    const p = page();
    const schedule = floodScheduler(p.frames, 100);
    let ran = 0;
    schedule(() => ran++);
    expect(p.waiting()).toEqual({ frames: 1, timers: [] });
    p.frame();
    expect(ran).toBe(1);
  });

  it('holds a change that follows closely until the gap has passed, then the next frame', () => {
    const p = page();
    const schedule = floodScheduler(p.frames, 100);
    let ran = 0;
    p.to(1000);
    schedule(() => ran++);
    p.frame();
    p.to(1016);
    schedule(() => ran++);
    expect(p.waiting()).toEqual({ frames: 0, timers: [1100] });
    p.to(1099);
    expect(ran).toBe(1);
    p.to(1100);
    expect(p.waiting().frames).toBe(1);
    expect(ran).toBe(1);
    p.frame();
    expect(ran).toBe(2);
  });

  it('counts the gap from when it last ran, so a change after a quiet spell is not held', () => {
    const p = page();
    const schedule = floodScheduler(p.frames, 100);
    let ran = 0;
    schedule(() => ran++);
    p.frame();
    p.to(250);
    schedule(() => ran++);
    expect(p.waiting()).toEqual({ frames: 1, timers: [] });
    p.frame();
    expect(ran).toBe(2);
  });

  it('brings a hidden page up to date on a timer, with no frames', () => {
    const p = page(false);
    const schedule = floodScheduler(p.frames, 100);
    let ran = 0;
    schedule(() => ran++);
    expect(p.waiting()).toEqual({ frames: 0, timers: [100] });
    p.to(100);
    expect(ran).toBe(1);
  });
});
