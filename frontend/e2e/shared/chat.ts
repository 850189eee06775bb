// The chats that checks make through the API.

import { api } from './page';
import type { Suite } from './suite';

/** Makes a chat titled title in cwd on the scripted model (provider e2e-model, auto mode); returns its id. */
export async function modelChat(ctx: Suite, title: string, cwd: string): Promise<string> {
  const made = await api(ctx.origin, ctx.token, 'POST', '/api/conversations', { title, provider: 'e2e-model', model: 'test-model', mode: 'auto', cwd });
  if (made.status !== 200 && made.status !== 201) throw new Error(`POST /api/conversations: ${made.status} ${JSON.stringify(made.json)}`);
  return made.json.id;
}

/** Fails a check that needs the providers' API when this binary does not serve it. */
export function needsProviders(ctx: Suite): void {
  if (!ctx.providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
}
