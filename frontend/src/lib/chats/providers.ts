// The presets the Providers page offers to connect.

export interface Preset {
  id: 'ollama' | 'lmstudio' | 'openrouter' | 'openai' | 'anthropic' | 'custom';
  name: string;
  /** The provider kind the server knows (`openai`-compatible or `anthropic`). */
  kind: 'openai' | 'anthropic';
  baseUrl?: string;
  needsUrl: boolean;
  needsKey: boolean;
  hint: string;
}

export const presets: readonly Preset[] = [
  { id: 'ollama', name: 'Ollama', kind: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', needsUrl: true, needsKey: false, hint: 'Models on this computer; no key. Start Ollama first.' },
  { id: 'lmstudio', name: 'LM Studio', kind: 'openai', baseUrl: 'http://127.0.0.1:1234/v1', needsUrl: true, needsKey: false, hint: 'Models on this computer; turn on its local server.' },
  { id: 'openrouter', name: 'OpenRouter', kind: 'openai', baseUrl: 'https://openrouter.ai/api/v1', needsUrl: false, needsKey: true, hint: 'Many vendors through one key (openrouter.ai/keys).' },
  { id: 'openai', name: 'OpenAI', kind: 'openai', baseUrl: 'https://api.openai.com/v1', needsUrl: false, needsKey: true, hint: 'An API key from platform.openai.com.' },
  { id: 'anthropic', name: 'Anthropic', kind: 'anthropic', needsUrl: false, needsKey: true, hint: 'An API key from console.anthropic.com.' },
  { id: 'custom', name: 'Custom (OpenAI-compatible)', kind: 'openai', needsUrl: true, needsKey: false, hint: 'Any server that speaks /v1/chat/completions: its URL, and a key if it wants one.' },
];

/** The id a connected provider is saved under: the preset's, or a slug of a custom one's name. */
export function providerId(p: Pick<Preset, 'id'>, name: string): string {
  if (p.id !== 'custom') return p.id;
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return slug === '' ? 'custom' : slug;
}

/** What the provider picker says for a chat's provider and model: the provider's name, never its id, and the model. */
export function pickerLabel(list: readonly Pick<ProviderLike, 'id' | 'name' | 'models'>[], id: string, model: string): string {
  if (id === '') return 'No provider';
  const p = list.find((x) => x.id === id);
  const name = p && p.name.trim() !== '' ? p.name : id === 'shell' ? 'Shell' : 'A provider no longer connected';
  const m = model !== '' ? model : (p?.models.default ?? '');
  return m !== '' ? `${name} · ${m}` : name;
}

/** True when a provider costs nothing to use: a model on this computer, or the shell. */
export function isFree(p: Pick<ProviderLike, 'kind' | 'category'> | undefined): boolean {
  return p !== undefined && (p.category === 'local-model' || p.kind === 'shell');
}

/** The fields of a listed provider the helpers here read. */
interface ProviderLike {
  id: string;
  kind: string;
  name: string;
  category: string;
  models: { default: string };
}
