// The page's own notifications, in a browser (`conch serve`): the window
// has the OS's, raised by the backend, so there this does nothing. Conch
// decides what is told (task.notice: once per finish and per question, as
// the person's topics allow); the page shows it unless the person already
// looks at that task's chat. It asks for the browser's permission only
// when the person says so (the offer), remembers the answer, and, once
// allowed, subscribes this browser to Web Push, so a finish is told while
// the page is closed too (the service worker, /sw.js, shows it).

import type { Backend } from '../backend/backend';
import { NoticeKind, type NoticeEvent } from '../backend/contract';
import { Page, type Nav } from '../nav.svelte';

/** The part of the browser's Notification this uses. */
export interface NotificationApi {
  readonly permission: NotificationPermission;
  requestPermission(): Promise<NotificationPermission>;
  new (title: string, options?: NotificationOptions): Pick<Notification, 'close' | 'onclick'>;
}

/** What the page lives in: the browser's, or a test's. */
export interface NoticeEnv {
  Notification: NotificationApi | undefined;
  serviceWorker: ServiceWorkerContainer | undefined;
  /** The page is shown (not a hidden tab or a minimised window). */
  visible(): boolean;
  /** Brings this tab forward. */
  focus(): void;
  /** Where the person's answer to the offer is kept (across visits). */
  kept: Pick<Storage, 'getItem' | 'setItem'>;
  /** Where this tab keeps the notices it told (across reloads). */
  told: Pick<Storage, 'getItem' | 'setItem'>;
}

/** The key of the person's answer to the offer: 'dismissed' (not now) or 'asked'. */
export const offerKey = 'conch.notifications.offer';
const toldKey = 'conch.notifications.told';
/** The most notices a tab remembers telling. */
const toldMax = 200;

/** The message the service worker sends a page when its notification is clicked. */
export const openMessage = 'conch.open';

function browserEnv(): NoticeEnv {
  const w = typeof window === 'undefined' ? undefined : window;
  return {
    Notification: w && 'Notification' in w ? (w.Notification as unknown as NotificationApi) : undefined,
    serviceWorker: w && 'serviceWorker' in w.navigator ? w.navigator.serviceWorker : undefined,
    visible: () => typeof document !== 'undefined' && document.visibilityState === 'visible',
    focus: () => w?.focus(),
    kept: w?.localStorage ?? memoryStorage(),
    told: w?.sessionStorage ?? memoryStorage(),
  };
}

function memoryStorage(): Pick<Storage, 'getItem' | 'setItem'> {
  const m: Record<string, string> = {};
  return { getItem: (k) => m[k] ?? null, setItem: (k, v) => void (m[k] = v) };
}

/** Reports whether the person sees the chat of the task a notice is about: it is open and the page visible. */
export function looksAtChat(e: NoticeEvent, nav: Pick<Nav, 'page' | 'chat'>, visible: boolean): boolean {
  if (!visible || nav.page !== Page.Chat || nav.chat === '') return false;
  return nav.chat === e.task.parentConversationId || nav.chat === e.task.conversationId;
}

/** What makes one notice one: a finish by when it ended, a question by its id. */
export function noticeKey(e: NoticeEvent): string {
  const when = e.notice.kind === NoticeKind.NoticeQuestion ? (e.task.ask?.id ?? '') : (e.task.endedAt ?? '');
  return `${e.notice.tag}:${e.notice.kind}:${when}`;
}

/**
 * BrowserNotices raises the page's notifications and keeps the offer to
 * turn them on. permission is the browser's ('unsupported' without the
 * Notification API, or in the window).
 */
export class BrowserNotices {
  permission = $state<NotificationPermission | 'unsupported'>('unsupported');
  /** The person said "Not now" to the offer (remembered). */
  dismissed = $state(false);

  readonly #backend: Pick<Backend, 'browser' | 'pushKey' | 'subscribePush'>;
  readonly #nav: Pick<Nav, 'page' | 'chat' | 'showTask'>;
  readonly #env: NoticeEnv;
  #worker: Promise<ServiceWorkerRegistration | undefined> = Promise.resolve(undefined);

  constructor(backend: Pick<Backend, 'browser' | 'pushKey' | 'subscribePush'>, nav: Pick<Nav, 'page' | 'chat' | 'showTask'>, env: NoticeEnv = browserEnv()) {
    this.#backend = backend;
    this.#nav = nav;
    this.#env = env;
  }

  /** The offer to turn them on shows: in a browser that can, not asked yet, not put off. */
  get offered(): boolean {
    return this.permission === 'default' && !this.dismissed;
  }

  /**
   * Reads how things stand, registers the service worker and, when
   * notifications are allowed, this browser's push subscription; returns
   * the function that stops listening to the worker.
   */
  start(): () => void {
    const N = this.#env.Notification;
    if (!this.#backend.browser || !N) return () => {};
    this.permission = N.permission;
    this.dismissed = this.#env.kept.getItem(offerKey) === 'dismissed';
    const sw = this.#env.serviceWorker;
    if (!sw) return () => {};
    this.#worker = sw.register('/sw.js', { scope: '/' }).catch(() => undefined);
    if (this.permission === 'granted') void this.#subscribe();
    const onMessage = (ev: MessageEvent): void => {
      const d = ev.data as { type?: unknown; taskId?: unknown } | null;
      if (d?.type === openMessage && typeof d.taskId === 'string') this.#nav.showTask(d.taskId);
    };
    sw.addEventListener('message', onMessage);
    return () => sw.removeEventListener('message', onMessage);
  }

  /** Asks the browser for permission (the person pressed "Turn on") and, allowed, subscribes to Web Push. */
  async turnOn(): Promise<void> {
    const N = this.#env.Notification;
    if (!N) return;
    this.#env.kept.setItem(offerKey, 'asked');
    try {
      this.permission = await N.requestPermission();
    } catch {
      this.permission = N.permission;
    }
    if (this.permission === 'granted') await this.#subscribe();
  }

  /** Puts the offer away for good ("Not now"); Settings can still turn them on. */
  dismiss(): void {
    this.dismissed = true;
    this.#env.kept.setItem(offerKey, 'dismissed');
  }

  /** Shows the notification Conch raised, once per tab, unless the person looks at its chat. */
  tell(e: NoticeEvent): void {
    const N = this.#env.Notification;
    if (!this.#backend.browser || !N || N.permission !== 'granted') return;
    const key = noticeKey(e);
    const told = this.#told();
    if (told.includes(key)) return;
    this.#env.told.setItem(toldKey, JSON.stringify([...told, key].slice(-toldMax)));
    if (looksAtChat(e, this.#nav, this.#env.visible())) return;
    const n = new N(e.notice.title, { body: e.notice.body, tag: e.notice.tag });
    n.onclick = () => {
      this.#env.focus();
      this.#nav.showTask(e.task.id);
      n.close();
    };
  }

  #told(): string[] {
    try {
      const v = JSON.parse(this.#env.told.getItem(toldKey) ?? '[]') as unknown;
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    } catch {
      return [];
    }
  }

  /** Subscribes this browser to Web Push with the server's key (again when the key changed) and hands the server the subscription. */
  async #subscribe(): Promise<void> {
    try {
      const reg = await this.#worker;
      if (!reg?.pushManager) return;
      const key = fromBase64Url((await this.#backend.pushKey()).publicKey);
      let sub = await reg.pushManager.getSubscription();
      if (sub && !sameBytes(sub.options.applicationServerKey, key)) {
        await sub.unsubscribe();
        sub = null;
      }
      sub ??= await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      const j = sub.toJSON();
      if (!j.endpoint || !j.keys?.p256dh || !j.keys.auth) return;
      await this.#backend.subscribePush({ endpoint: j.endpoint, expirationTime: j.expirationTime ?? null, keys: { p256dh: j.keys.p256dh, auth: j.keys.auth } });
    } catch {
      // A browser without a push service (or one that refuses) still gets
      // the page's own notifications while it is open.
    }
  }
}

function fromBase64Url(s: string): Uint8Array<ArrayBuffer> {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(b.length));
  for (let i = 0; i < b.length; i++) out[i] = b.charCodeAt(i);
  return out;
}

function sameBytes(a: ArrayBuffer | null, b: Uint8Array): boolean {
  if (!a || a.byteLength !== b.length) return false;
  const x = new Uint8Array(a);
  return x.every((v, i) => v === b[i]);
}
