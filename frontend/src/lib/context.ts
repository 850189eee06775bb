import { getContext, setContext } from 'svelte';
import type { Clock } from './clock.svelte';
import type { TasksStore } from './tasks/store.svelte';

const key = Symbol('conch');

/** What the app shares with every component below it. */
export interface AppContext {
  tasks: TasksStore;
  clock: Clock;
}

/** Makes ctx available to the components below the caller. */
export function provideApp(ctx: AppContext): void {
  setContext(key, ctx);
}

/** The app's shared store and clock. */
export function useApp(): AppContext {
  const ctx = getContext<AppContext | undefined>(key);
  if (!ctx) throw new Error('useApp called outside App');
  return ctx;
}
