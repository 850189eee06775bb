import type { Backend } from '../backend/backend';
import { Level, type DoctorCheck, type DoctorReport } from '../backend/contract';
import { toApiError } from '../backend/error';
import { sentence } from '../tasks/store.svelte';

/** How often the doctor is asked again while the app is open. */
export const doctorEveryMs = 60_000;

/** How each level reads: its word, colour family and icon. */
export const levelLanguage: Readonly<Record<Level, { word: string; tone: 'green' | 'blue' | 'amber' | 'red'; icon: 'check' | 'info' | 'warn' | 'cross' }>> = {
  [Level.OK]: { word: 'OK', tone: 'green', icon: 'check' },
  [Level.Info]: { word: 'Note', tone: 'blue', icon: 'info' },
  [Level.Warn]: { word: 'Needs a look', tone: 'amber', icon: 'warn' },
  [Level.Fail]: { word: 'Broken', tone: 'red', icon: 'cross' },
};

/** Reports whether a check wants the person's attention (warn or fail). */
export function isProblem(c: Pick<DoctorCheck, 'level'>): boolean {
  return c.level === Level.Warn || c.level === Level.Fail;
}

/** Reports whether the sidebar's Doctor entry carries its (!) marker. */
export function needsAttention(r: DoctorReport | null): boolean {
  return r?.checks.some(isProblem) ?? false;
}

/** What the (!) marker says to a screen reader. */
export function attentionLabel(r: DoctorReport | null): string {
  const n = r?.checks.filter(isProblem).length ?? 0;
  return n === 1 ? '1 check needs a look' : `${n} checks need a look`;
}

/** DoctorStore keeps the last report: loaded at start, when the page is shown, and every minute. */
export class DoctorStore {
  report: DoctorReport | null = $state(null);
  /** One sentence when the last check could not be made. */
  error = $state('');
  /** True while a check is in flight. */
  checking = $state(false);
  /** When the report was last made (ms since the epoch), 0 before. */
  checkedAt = $state(0);

  readonly #backend: Backend;
  #inflight: Promise<void> | null = null;

  constructor(backend: Backend) {
    this.#backend = backend;
  }

  /** Asks the doctor now (joins a check already in flight). */
  refresh(): Promise<void> {
    if (this.#inflight) return this.#inflight;
    this.checking = true;
    this.#inflight = (async () => {
      try {
        this.report = await this.#backend.doctor();
        this.checkedAt = Date.now();
        this.error = '';
      } catch (e) {
        this.error = sentence(toApiError(e));
      } finally {
        this.checking = false;
        this.#inflight = null;
      }
    })();
    return this.#inflight;
  }

  /** Checks now and every everyMs; returns the function that stops it. */
  start(everyMs = doctorEveryMs): () => void {
    void this.refresh();
    const timer = setInterval(() => void this.refresh(), everyMs);
    return () => clearInterval(timer);
  }
}
