// The first run's welcome: when it is the page Conch opens on, and what it
// says of what Conch found on this computer.

import type { Found } from '../backend/contract';

/** One line of "what Conch found", with whether it is something that works now. */
export interface FoundLine {
  /** What it is, for a test and a key ("ollama", "cli-codex", "key-OPENAI_API_KEY"). */
  id: string;
  text: string;
  /** True when it can answer a chat now. */
  ready: boolean;
  /** A short detail under it: a path, a CLI's own reason. */
  detail?: string;
}

/**
 * The welcome is where Conch opens when nothing has been done with it yet:
 * no page asked for in the address, and no task and no chat once both
 * lists are in.
 */
export function opensOnWelcome(s: { hash: string; tasksLoaded: boolean; chatsLoaded: boolean; tasks: number; chats: number }): boolean {
  const asked = s.hash.replace(/^#/, '') !== '';
  return !asked && s.tasksLoaded && s.chatsLoaded && s.tasks === 0 && s.chats === 0;
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** What Conch found, one line each: Ollama, each CLI on PATH, each key in the environment. */
export function foundLines(f: Found): FoundLine[] {
  const lines: FoundLine[] = [];
  if (f.ollama.running) {
    const n = f.ollama.models.length;
    lines.push({
      id: 'ollama',
      ready: n > 0,
      text: n > 0 ? `Ollama is running on ${f.ollama.address}, with ${plural(n, 'model', 'models')}.` : `Ollama is running on ${f.ollama.address}, but has no model yet.`,
      ...(n > 0 ? { detail: f.ollama.models.slice(0, 4).join(', ') + (n > 4 ? ` and ${n - 4} more` : '') } : { detail: 'Pull one with `ollama pull qwen3:8b`, then check again.' }),
    });
  } else {
    lines.push({ id: 'ollama', ready: false, text: `Ollama is not running on ${f.ollama.address || 'this computer'}.`, detail: 'Start it (or LM Studio’s local server) to chat with a model on this computer.' });
  }
  for (const c of f.clis) {
    lines.push({
      id: `cli-${c.id}`,
      ready: c.ready,
      text: c.ready ? `${c.name} is on your PATH and signed in.` : `${c.name} is on your PATH, but not ready.`,
      detail: c.ready ? c.path : (c.reason ?? '').trim() || c.path,
    });
  }
  if (f.clis.length === 0) lines.push({ id: 'clis', ready: false, text: 'No coding-agent CLI (Claude Code, Codex, Gemini CLI) is on your PATH.' });
  for (const k of f.keys) lines.push({ id: `key-${k.variable}`, ready: true, text: `${k.variable} is set, so ${k.name} is connected.` });
  return lines;
}

/** True when something found can answer a chat in words. */
export function canChat(f: Found): boolean {
  return foundLines(f).some((l) => l.ready);
}

/** The command "Try a shell task" puts in the tasks page's composer. */
export const exampleCommand = 'echo "Hello from Conch" && uname -a && date';
