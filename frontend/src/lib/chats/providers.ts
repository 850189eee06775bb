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

/** The presets, the common choices first; the form starts on the first. */
export const presets: readonly Preset[] = [
  { id: 'ollama', name: 'Ollama', kind: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', needsUrl: true, needsKey: false, hint: 'Models on this computer; no key. Start Ollama first.' },
  { id: 'openai', name: 'OpenAI', kind: 'openai', baseUrl: 'https://api.openai.com/v1', needsUrl: false, needsKey: true, hint: 'An API key from platform.openai.com.' },
  { id: 'anthropic', name: 'Anthropic', kind: 'anthropic', needsUrl: false, needsKey: true, hint: 'An API key from console.anthropic.com.' },
  { id: 'lmstudio', name: 'LM Studio', kind: 'openai', baseUrl: 'http://127.0.0.1:1234/v1', needsUrl: true, needsKey: false, hint: 'Models on this computer; turn on its local server.' },
  { id: 'openrouter', name: 'OpenRouter', kind: 'openai', baseUrl: 'https://openrouter.ai/api/v1', needsUrl: false, needsKey: true, hint: 'Many vendors through one key (openrouter.ai/keys).' },
  { id: 'custom', name: 'Custom (OpenAI-compatible)', kind: 'openai', needsUrl: true, needsKey: false, hint: 'Any server that speaks /v1/chat/completions: its URL, and a key if it wants one.' },
];

/** The local model server an empty chat points to by name when it is connected: the Ollama preset. */
const ollama = presets.find((p) => p.id === 'ollama') as Preset;

/**
 * The connected provider that is Ollama, if one is: its id or its name says
 * so (the preset's id, or a name such as "Ollama on the desk"), whatever the
 * case.
 */
export function ollamaOf<P extends Pick<ProviderLike, 'id' | 'name'>>(list: readonly P[]): P | undefined {
  const word = ollama.name.toLowerCase();
  return list.find((p) => p.id.toLowerCase().includes(word) || p.name.toLowerCase().includes(word));
}

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

/** The fields of a listed provider that editing it reads. */
type Editable = Pick<ProviderLike, 'kind' | 'name'> & {
  ready: boolean;
  reason: string;
  keySet: boolean;
  preset?: string | undefined;
  baseUrl?: string | undefined;
  models: { default: string };
};

/** What the edit form holds. */
export interface EditForm {
  name: string;
  baseUrl: string;
  /** '' keeps the key the provider has. */
  apiKey: string;
  model: string;
}

/** True for a kind that talks to a model API and so may take a URL and a key. */
export function takesKey(kind: string): boolean {
  return kind === 'openai' || kind === 'anthropic';
}

/** The form to edit p with, filled from what it has now (never its key). */
export function editForm(p: Editable): EditForm {
  return { name: p.name, baseUrl: p.baseUrl ?? '', apiKey: '', model: p.models.default };
}

/**
 * The whole configuration a PUT saves for an edit of p: its kind and preset
 * kept, the key left out unless one was typed (so the one it has stays),
 * the URL only when it was changed or a custom server needs it (a preset's
 * own URL is left to the preset, so a key from the environment still
 * reaches its service).
 */
export function editConfig(p: Editable, f: EditForm): { kind: string; preset?: string; name?: string; baseUrl?: string; apiKey?: string; model?: string } {
  const cfg: { kind: string; preset?: string; name?: string; baseUrl?: string; apiKey?: string; model?: string } = { kind: p.kind };
  if (p.preset) cfg.preset = p.preset;
  if (f.name.trim() !== '') cfg.name = f.name.trim();
  const url = f.baseUrl.trim();
  if (takesKey(p.kind) && url !== '' && (url !== (p.baseUrl ?? '') || (p.kind === 'openai' && !p.preset))) cfg.baseUrl = url;
  if (takesKey(p.kind) && f.apiKey.trim() !== '') cfg.apiKey = f.apiKey.trim();
  if (f.model.trim() !== '') cfg.model = f.model.trim();
  return cfg;
}

/** True when p is not ready for want of a key, so its card offers "Add key". */
export function needsKey(p: Editable): boolean {
  if (p.ready || p.keySet || !takesKey(p.kind)) return false;
  if (p.preset === 'ollama' || p.preset === 'lmstudio') return false;
  return p.kind === 'anthropic' || p.preset === 'openai' || p.preset === 'openrouter' || /\b(key|auth|401|403|unauthori[sz]ed|forbidden)\b/i.test(p.reason);
}
