// The timers and holds here are bookkeeping that no view reads.
/* eslint-disable svelte/prefer-svelte-reactivity */
import type { ToastSpec } from './rules';

/** A toast on screen. */
export interface Toast extends ToastSpec {
  id: number;
}

/** How long a toast stays when nobody hovers or focuses it. */
export const toastMs = 6000;
/** The most toasts stacked at once; the oldest goes first. */
export const maxToasts = 4;

/** Why a toast is being kept: the pointer is over it, or focus is in it. */
export type Hold = 'hover' | 'focus';

/**
 * ToastStore holds the toasts on screen. Each leaves after toastMs unless it
 * is held (hovered or focused); once let go it gets the full time again. A
 * new toast about the same task and of the same kind replaces the old one.
 */
export class ToastStore {
  items: Toast[] = $state([]);

  #seq = 0;
  readonly #timers = new Map<number, ReturnType<typeof setTimeout>>();
  readonly #holds = new Map<number, Set<Hold>>();

  /** Shows a toast and returns its id. */
  show(spec: ToastSpec): number {
    const id = ++this.#seq;
    for (const t of this.items) if (t.taskId === spec.taskId && t.kind === spec.kind) this.dismiss(t.id);
    while (this.items.length >= maxToasts) {
      const oldest = this.items[0];
      if (!oldest) break;
      this.dismiss(oldest.id);
    }
    this.items = [...this.items, { ...spec, id }];
    this.#arm(id);
    return id;
  }

  /** Removes a toast now. */
  dismiss(id: number): void {
    this.#disarm(id);
    this.#holds.delete(id);
    this.items = this.items.filter((t) => t.id !== id);
  }

  /** Keeps a toast on screen while why lasts. */
  hold(id: number, why: Hold): void {
    let h = this.#holds.get(id);
    if (!h) this.#holds.set(id, (h = new Set()));
    h.add(why);
    this.#disarm(id);
  }

  /** Ends one reason to keep a toast; with none left its time starts again. */
  release(id: number, why: Hold): void {
    const h = this.#holds.get(id);
    h?.delete(why);
    if ((h?.size ?? 0) === 0 && this.items.some((t) => t.id === id)) this.#arm(id);
  }

  /** Clears every toast and timer. */
  clear(): void {
    for (const id of [...this.#timers.keys()]) this.#disarm(id);
    this.#holds.clear();
    this.items = [];
  }

  #arm(id: number): void {
    this.#disarm(id);
    this.#timers.set(
      id,
      setTimeout(() => this.dismiss(id), toastMs),
    );
  }

  #disarm(id: number): void {
    const t = this.#timers.get(id);
    if (t !== undefined) clearTimeout(t);
    this.#timers.delete(id);
  }
}
