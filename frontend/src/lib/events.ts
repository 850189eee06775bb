// One stream carries every event of the app; this is the one place that
// says where each goes. Task changes go to the tasks store (applied together
// at the next frame), chat events to the chats store, and the app's own
// requests (a clicked notification, a chat picked in the tray, the global
// shortcut) to navigation, the notifications Conch raised to the page's
// own (a browser's), a host's change to the hosts, and a provider's to the
// chats' list of them. A reconnect reloads everything the stream keeps
// current, since events may have been missed meanwhile.

import type { Backend } from './backend/backend';
import { EventType, type AppEvent } from './backend/contract';
import type { ChatsStore } from './chats/store.svelte';
import type { HomeFolder } from './home.svelte';
import type { HostsBook } from './hosts.svelte';
import type { Nav } from './nav.svelte';
import type { BrowserNotices } from './notices/browser.svelte';
import type { TasksStore } from './tasks/store.svelte';

/** Who hears the stream: the parts of each that it calls. */
export interface Hearers {
  tasks: Pick<TasksStore, 'enqueue' | 'flush' | 'reload' | 'grew'>;
  chats: Pick<ChatsStore, 'apply' | 'reload' | 'loadProviders'>;
  nav: Pick<Nav, 'showTask' | 'openChat' | 'requestCompose'>;
  home: Pick<HomeFolder, 'load'>;
  hosts: Pick<HostsBook, 'load'>;
  /** The page's own notifications (a browser only; the window's are the OS's). */
  notices: Pick<BrowserNotices, 'tell'>;
}

/** Hands one event to whoever it is for. */
export function route(e: AppEvent, to: Hearers): void {
  switch (e.type) {
    case EventType.ConversationChanged:
    case EventType.MessageAdded:
    case EventType.MessageDelta:
      to.chats.apply(e);
      return;
    case EventType.Open:
      // The task may have come in this frame: apply what came before first.
      to.tasks.flush();
      to.nav.showTask(e.id);
      return;
    case EventType.OpenChat:
      to.nav.openChat(e.id);
      return;
    case EventType.Compose:
      to.nav.requestCompose();
      return;
    case EventType.TaskNotice:
      to.notices.tell(e);
      return;
    case EventType.TaskOutput:
      to.tasks.grew(e.id, e.outputBytes);
      return;
    case EventType.HostChanged:
      void to.hosts.load();
      return;
    case EventType.ProvidersChanged:
      void to.chats.loadProviders();
      return;
    default:
      to.tasks.enqueue(e);
  }
}

/**
 * Subscribes to the backend's events and loads the tasks; once they are in,
 * shows the task a notification asked for before this page listened (a click
 * that started Conch). Returns the function that stops it.
 */
export function listen(backend: Backend, to: Hearers): () => void {
  const off = backend.subscribe(
    (e) => route(e, to),
    () => {
      void to.tasks.reload();
      void to.chats.reload();
      void to.home.load();
      void to.hosts.load();
    },
  );
  void to.tasks.reload().then(() => takeOpen(backend, to));
  return off;
}

async function takeOpen(backend: Backend, to: Hearers): Promise<void> {
  try {
    const id = await backend.takeOpen();
    if (id) to.nav.showTask(id);
  } catch {
    // Nothing was waiting that can be shown.
  }
}
