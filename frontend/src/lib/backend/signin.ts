/** Where the page keeps its sign-in token: this tab's session storage, which no other origin (another port) can read. */
export const tokenKey = 'conch.token';

/** What takeToken needs of the page: its address, its history and its session storage. */
export interface SignInPage {
  location: Pick<Location, 'hash' | 'pathname' | 'search'>;
  history: Pick<History, 'replaceState'>;
  sessionStorage: Pick<Storage, 'getItem' | 'setItem'>;
}

/**
 * Takes the sign-in token from the link's fragment (`#token=…`, which a
 * browser never sends to a server, a log or a Referer) into session storage,
 * and takes it out of the address bar. Returns the token to sign requests
 * with, or null when the page was opened without one.
 */
export function takeToken(page: SignInPage): string | null {
  const m = /^#token=([0-9A-Za-z]+)$/.exec(page.location.hash);
  if (m?.[1]) {
    try {
      page.sessionStorage.setItem(tokenKey, m[1]);
    } catch {
      // Storage refused (a private window's quota): the token still works for this page.
    }
    page.history.replaceState(null, '', page.location.pathname + page.location.search);
    return m[1];
  }
  try {
    return page.sessionStorage.getItem(tokenKey);
  } catch {
    return null;
  }
}
