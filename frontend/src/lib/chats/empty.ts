// What an empty chat says about the providers: how to connect one when none
// is ready, and that it runs on Ollama when it does. Ollama is the one local
// server named here (ollamaOf says which connected provider it is).

import { ollamaOf } from './providers';

/** The fields of a listed provider read here. */
interface Listed {
  id: string;
  name: string;
  ready: boolean;
  reason: string;
}

/** With no provider ready: what to do about it (Ollama found but not answering, the list's error, or the choices). */
export function connectLine(providers: readonly Listed[], listError: string): string {
  const o = ollamaOf(providers);
  if (o) return `Ollama was found on this computer${o.reason ? `, but: ${o.reason}` : ''}.`;
  if (listError) return listError;
  return 'Run Ollama or LM Studio on this computer, or add an OpenAI-compatible URL or an API key.';
}

/** Above a new chat's first message: that it runs on Ollama here ('' when its provider is not a ready Ollama). */
export function localLine(providers: readonly Listed[], provider: string): string {
  const o = ollamaOf(providers);
  return o?.ready && provider === o.id ? 'Ollama is running on this computer; this chat uses it.' : '';
}
