import type { Backend } from './backend';
import { HttpBackend } from './http';
import { takeToken } from './signin';
import { WailsBackend } from './wails';

export type { Backend } from './backend';
export { ApiError } from './error';

/**
 * Picks the desktop bindings when the page runs inside the Wails window, else
 * HTTP to the gateway, signed with the token from the sign-in link.
 */
export function pickBackend(w: Window = window): Backend {
  const app = w.go?.service?.Service;
  return app ? new WailsBackend(app, w.runtime) : new HttpBackend('', takeToken(w));
}
