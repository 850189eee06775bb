// Which page the main area shows, and what the person (or a notification,
// the tray, the palette) asked it to bring up next. The page lives in the
// URL's hash (#tasks, #approvals, #activity, #routines, #doctor, #settings, #welcome) so a reload
// keeps it and the back button works; anything unknown means the tasks page.

/** The app's pages. */
export const Page = { Tasks: 'tasks', Approvals: 'approvals', Activity: 'activity', Routines: 'routines', Doctor: 'doctor', Settings: 'settings', Chat: 'chat', Providers: 'providers', Welcome: 'welcome' } as const;
export type Page = (typeof Page)[keyof typeof Page];

const pages: readonly string[] = Object.values(Page);

/** The page a hash ("#doctor") or an app link ("/doctor") names; the tasks page for anything else. */
export function pageOf(ref: string): Page {
  const name = ref.replace(/^[#/]+/, '').split(/[/?#]/)[0] ?? '';
  return pages.includes(name) ? (name as Page) : Page.Tasks;
}

/** The chat a hash names ("#chat/ID"), or '' for a new chat ("#chat"). */
export function chatOf(ref: string): string {
  const m = /^[#/]*chat\/([^/?#]+)/.exec(ref);
  return m?.[1] ? decodeURIComponent(m[1]) : '';
}

/** Which composer a compose request is for: the tasks page's, or the open chat's. */
export const ComposeTarget = { Tasks: 'tasks', Chat: 'chat' } as const;
export type ComposeTarget = (typeof ComposeTarget)[keyof typeof ComposeTarget];

/**
 * Nav holds the current page and follows the URL's hash. It also holds the
 * requests to bring something up (a task, its card in a chat, a composer):
 * each is numbered (seq) so a repeat is told apart, and the page that acts on
 * one marks it handled.
 */
export class Nav {
  page: Page = $state(Page.Tasks);
  /** On the chat page: the chat shown, or '' for a new one. */
  chat = $state('');
  /** The task to bring into view (a clicked notification, the palette); seq tells repeats apart. */
  reveal = $state<{ id: string; seq: number } | null>(null);
  /** The last reveal the tasks page acted on, so a page shown again does not act twice. */
  revealHandled = 0;
  /** A task whose card the chat page is to bring into view (the app opened the chat it came from); taken once. */
  cardToShow: string | null = $state(null);
  /** Asks for the composer (the global shortcut, the palette): seq counts requests. */
  compose = $state(0);
  /** The composer the last compose request is for. */
  composeTo: ComposeTarget = $state(ComposeTarget.Tasks);
  /** The last compose request a page acted on. */
  composeHandled = 0;

  readonly #keep: (id: string) => void;

  /**
   * keep is told of every task about to be shown, before it is (the tasks
   * store keeps a finished one listed that its pages have not reached).
   */
  constructor(keep: (id: string) => void = () => {}) {
    this.#keep = keep;
  }

  /** Reads the hash now and follows its changes; returns the function that stops it. */
  start(): () => void {
    const read = (): void => {
      this.page = pageOf(window.location.hash);
      this.chat = chatOf(window.location.hash);
    };
    read();
    window.addEventListener('hashchange', read);
    return () => window.removeEventListener('hashchange', read);
  }

  /**
   * Shows page p (a no-op when it is already shown). With focus, the page's
   * heading takes the keyboard once it shows: for when what had it (the
   * palette, a toast, a link on the page left) is going away.
   */
  go(p: Page, focus = false): void {
    this.page = p;
    if (p !== Page.Chat) this.chat = '';
    if (typeof window !== 'undefined' && (pageOf(window.location.hash) !== p || (p === Page.Chat && chatOf(window.location.hash) !== ''))) window.location.hash = p;
    if (focus && typeof requestAnimationFrame === 'function') {
      requestAnimationFrame(() => document.querySelector<HTMLElement>(`#${p} [data-page-heading]`)?.focus());
    }
  }

  /** Shows the chat id, or a new chat for ''. */
  openChat(id: string): void {
    this.page = Page.Chat;
    this.chat = id;
    const hash = id === '' ? Page.Chat : `${Page.Chat}/${encodeURIComponent(id)}`;
    if (typeof window !== 'undefined' && window.location.hash.replace(/^#/, '') !== hash) window.location.hash = hash;
  }

  /** Shows a task: the same as a click on its notification (the app decides where: the tasks page or its chat). */
  showTask(id: string): void {
    this.#keep(id);
    this.reveal = { id, seq: (this.reveal?.seq ?? 0) + 1 };
  }

  /**
   * Asks for the composer, sending what it holds (the global shortcut, the
   * palette): the open chat's when a chat is open, else the tasks page's,
   * which is shown for it.
   */
  requestCompose(): void {
    this.composeTo = this.page === Page.Chat ? ComposeTarget.Chat : ComposeTarget.Tasks;
    if (this.composeTo === ComposeTarget.Tasks) this.go(Page.Tasks);
    this.compose++;
  }
}
