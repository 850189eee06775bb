import { describe, expect, it, vi } from 'vitest';
import { EventType, NoticeKind, Status, type NoticeEvent } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { Page } from '../nav.svelte';
import { BrowserNotices, offerKey, openMessage, type NoticeEnv, type NotificationApi } from './browser.svelte';

function storage(): Pick<Storage, 'getItem' | 'setItem'> {
  const m = new Map<string, string>();
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v) };
}

/** A browser's Notification whose permission the test sets, keeping what was raised. */
function fakeNotification(permission: NotificationPermission, answer: NotificationPermission = 'granted') {
  const raised: { title: string; options?: NotificationOptions; n: { close: () => void; onclick: ((this: Notification, ev: Event) => unknown) | null } }[] = [];
  const N = class {
    static permission = permission;
    static requestPermission = vi.fn(async () => {
      N.permission = answer;
      return answer;
    });
    onclick: ((this: Notification, ev: Event) => unknown) | null = null;
    close = vi.fn();
    constructor(title: string, options?: NotificationOptions) {
      raised.push({ title, options, n: this });
    }
  };
  return { N: N as unknown as NotificationApi & { permission: NotificationPermission }, raised };
}

function setup(opts: { permission?: NotificationPermission; browser?: boolean; visible?: boolean; page?: Page; chat?: string; told?: Pick<Storage, 'getItem' | 'setItem'> } = {}) {
  const { N, raised } = fakeNotification(opts.permission ?? 'granted');
  const listeners: ((ev: MessageEvent) => void)[] = [];
  const subscription = {
    options: { applicationServerKey: new Uint8Array([1, 2, 3]).buffer },
    toJSON: () => ({ endpoint: 'https://push.example.net/1', expirationTime: null, keys: { p256dh: 'BPk', auth: 'au' } }),
    unsubscribe: vi.fn(async () => true),
  };
  const pushManager = { getSubscription: vi.fn(async () => null), subscribe: vi.fn(async () => subscription) };
  const sw = {
    register: vi.fn(async () => ({ pushManager }) as unknown as ServiceWorkerRegistration),
    addEventListener: (_: string, f: (ev: MessageEvent) => void) => listeners.push(f),
    removeEventListener: vi.fn(),
  } as unknown as ServiceWorkerContainer;
  const env: NoticeEnv = { Notification: N, serviceWorker: sw, visible: () => opts.visible ?? true, focus: vi.fn(), kept: storage(), told: opts.told ?? storage() };
  const nav = { page: opts.page ?? Page.Tasks, chat: opts.chat ?? '', showTask: vi.fn() };
  const backend = { browser: opts.browser ?? true, pushKey: vi.fn(async () => ({ publicKey: 'AQID' })), subscribePush: vi.fn() };
  const notices = new BrowserNotices(backend, nav, env);
  return { notices, raised, env, nav, backend, sw, listeners, N, pushManager };
}

const finished = (id: string, over: Partial<NoticeEvent['task']> = {}): NoticeEvent => ({
  type: EventType.TaskNotice,
  task: makeTask({ id, status: Status.Done, conversationId: `own-${id}`, parentConversationId: `chat-${id}`, endedAt: '2026-12-02T10:00:00Z', ...over }),
  notice: { kind: NoticeKind.NoticeFinished, tag: `task-${id}`, title: 'Tidy the README — done', body: '3 files changed.' },
});

describe('the page\'s own notifications', () => {
  it('raise one notification per finish under the task\'s tag, and a click opens it', () => {
    const { notices, raised, nav, env } = setup();
    notices.start();
    notices.tell(finished('a'));
    notices.tell(finished('a')); // the same finish again (a second tab's event, a replay)
    expect(raised).toHaveLength(1);
    expect(raised[0]?.title).toBe('Tidy the README — done');
    expect(raised[0]?.options).toEqual({ body: '3 files changed.', tag: 'task-a' });
    raised[0]?.n.onclick?.call({} as Notification, new Event('click'));
    expect(env.focus).toHaveBeenCalled();
    expect(nav.showTask).toHaveBeenCalledWith('a');
    // A retry that finishes again is news again.
    notices.tell(finished('a', { endedAt: '2026-12-02T11:00:00Z' }));
    expect(raised).toHaveLength(2);
  });

  it('are not raised again after a reload of the tab', () => {
    const told = storage();
    const first = setup({ told });
    first.notices.tell(finished('r'));
    const reloaded = setup({ told });
    reloaded.notices.tell(finished('r'));
    expect(first.raised).toHaveLength(1);
    expect(reloaded.raised).toHaveLength(0);
  });

  it('stay quiet while the task\'s chat is open and the page visible', () => {
    for (const chat of ['chat-c', 'own-c']) {
      const { notices, raised } = setup({ page: Page.Chat, chat, visible: true });
      notices.tell(finished('c'));
      expect(raised).toHaveLength(0);
    }
    // The same chat in a hidden tab, or another chat shown: told.
    const hidden = setup({ page: Page.Chat, chat: 'chat-c', visible: false });
    hidden.notices.tell(finished('c'));
    const elsewhere = setup({ page: Page.Chat, chat: 'chat-x' });
    elsewhere.notices.tell(finished('c'));
    expect([hidden.raised.length, elsewhere.raised.length]).toEqual([1, 1]);
  });

  it('do nothing in the window, or without the permission', () => {
    const win = setup({ browser: false });
    expect(win.notices.start()).toBeTypeOf('function');
    win.notices.tell(finished('w'));
    expect(win.raised).toHaveLength(0);
    expect(win.notices.offered).toBe(false);
    expect(win.sw.register).not.toHaveBeenCalled();
    const denied = setup({ permission: 'denied' });
    denied.notices.start();
    denied.notices.tell(finished('d'));
    expect(denied.raised).toHaveLength(0);
    expect(denied.notices.offered).toBe(false);
  });

  it('are offered once: the browser asks only on Turn on, and Not now is remembered', async () => {
    const { notices, N, env, backend, pushManager } = setup({ permission: 'default' });
    notices.start();
    expect(N.requestPermission).not.toHaveBeenCalled();
    expect(notices.offered).toBe(true);
    await notices.turnOn();
    expect(N.requestPermission).toHaveBeenCalledTimes(1);
    expect(notices.permission).toBe('granted');
    expect(notices.offered).toBe(false);
    // It went on to subscribe this browser with the server's key ('AQID' is 1, 2, 3).
    expect(pushManager.subscribe).toHaveBeenCalledWith({ userVisibleOnly: true, applicationServerKey: new Uint8Array([1, 2, 3]) });
    expect(backend.subscribePush).toHaveBeenCalledWith({ endpoint: 'https://push.example.net/1', expirationTime: null, keys: { p256dh: 'BPk', auth: 'au' } });
    expect(env.kept.getItem(offerKey)).toBe('asked');

    const later = setup({ permission: 'default' });
    later.notices.start();
    later.notices.dismiss();
    expect(later.notices.offered).toBe(false);
    const again = new BrowserNotices(later.backend, later.nav, later.env);
    again.start();
    expect(again.offered).toBe(false);
  });

  it('register the service worker, and open the task its notification\'s click names', () => {
    const { notices, sw, listeners, nav } = setup();
    notices.start();
    expect(sw.register).toHaveBeenCalledWith('/sw.js', { scope: '/' });
    for (const f of listeners) f(new MessageEvent('message', { data: { type: openMessage, taskId: 't9' } }));
    for (const f of listeners) f(new MessageEvent('message', { data: { type: 'other', taskId: 'x' } }));
    expect(nav.showTask).toHaveBeenCalledTimes(1);
    expect(nav.showTask).toHaveBeenCalledWith('t9');
  });
});
