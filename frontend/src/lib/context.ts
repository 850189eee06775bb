import { getContext, setContext } from 'svelte';
import type { Inbox } from './approvals/inbox.svelte';
import type { Backend } from './backend';
import type { ChatsStore } from './chats/store.svelte';
import type { Clock } from './clock.svelte';
import type { DoctorStore } from './doctor/doctor.svelte';
import type { Draft } from './draft.svelte';
import type { HomeFolder } from './home.svelte';
import type { HostsBook } from './hosts.svelte';
import type { Nav } from './nav.svelte';
import type { BrowserNotices } from './notices/browser.svelte';
import type { TasksStore } from './tasks/store.svelte';
import type { ToastStore } from './toasts/toasts.svelte';

const key = Symbol('conch');

/** What the app shares with every component below it. */
export interface AppContext {
  backend: Backend;
  tasks: TasksStore;
  chats: ChatsStore;
  /** The pending questions of the tasks and the chats: the approval inbox. */
  inbox: Inbox;
  clock: Clock;
  nav: Nav;
  doctor: DoctorStore;
  toasts: ToastStore;
  /** The page's own notifications and the offer to turn them on (a browser only). */
  notices: BrowserNotices;
  draft: Draft;
  /** The person's home folder: home.short(p) is how every surface shows a folder. */
  home: HomeFolder;
  /** The other computers Conch reaches: how a task's host is named, and whether it is in reach. */
  hosts: HostsBook;
  /** Opens the ⌘K palette. */
  openPalette: () => void;
}

/** Makes ctx available to the components below the caller. */
export function provideApp(ctx: AppContext): void {
  setContext(key, ctx);
}

/** The app's shared stores. */
export function useApp(): AppContext {
  const ctx = getContext<AppContext | undefined>(key);
  if (!ctx) throw new Error('useApp called outside App');
  return ctx;
}
