// Which page the main area shows. The page lives in the URL's hash (#tasks,
// #approvals, #doctor, #settings, #welcome) so a reload keeps it and the
// back button works; anything unknown means the tasks page.

/** The app's pages. */
export const Page = { Tasks: 'tasks', Approvals: 'approvals', Doctor: 'doctor', Settings: 'settings', Chat: 'chat', Providers: 'providers', Welcome: 'welcome' } as const;
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

/** Nav holds the current page and follows the URL's hash. */
export class Nav {
  page: Page = $state(Page.Tasks);
  /** On the chat page: the chat shown, or '' for a new one. */
  chat = $state('');

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
}
