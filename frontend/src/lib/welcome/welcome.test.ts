import { describe, expect, it } from 'vitest';
import { canChat, foundLines, opensOnWelcome } from './welcome';

const none = { ollama: { running: false, address: '127.0.0.1:11434', models: [] }, clis: [], keys: [] };

describe('opensOnWelcome', () => {
  const fresh = { hash: '', tasksLoaded: true, chatsLoaded: true, tasks: 0, chats: 0 };
  it('opens on the welcome when nothing has been done yet', () => {
    expect(opensOnWelcome(fresh)).toBe(true);
  });
  it('not once there is a task or a chat, a page asked for, or before the lists are in', () => {
    expect(opensOnWelcome({ ...fresh, tasks: 1 })).toBe(false);
    expect(opensOnWelcome({ ...fresh, chats: 2 })).toBe(false);
    expect(opensOnWelcome({ ...fresh, hash: '#tasks' })).toBe(false);
    expect(opensOnWelcome({ ...fresh, chatsLoaded: false })).toBe(false);
  });
});

describe('foundLines', () => {
  it('says what was found: Ollama with its models, each CLI as it stands, each key by name', () => {
    const lines = foundLines({
      ollama: { running: true, address: '127.0.0.1:11434', models: ['qwen3:8b', 'llama3.2:3b'] },
      clis: [
        { id: 'claude-code', name: 'Claude Code', path: '/usr/bin/claude', ready: false, reason: 'Not logged in · Please run /login' },
        { id: 'codex', name: 'Codex', path: '/usr/bin/codex', ready: true },
      ],
      keys: [{ variable: 'OPENAI_API_KEY', provider: 'openai', name: 'OpenAI' }],
    });
    expect(lines).toEqual([
      { id: 'ollama', ready: true, text: 'Ollama is running on 127.0.0.1:11434, with 2 models.', detail: 'qwen3:8b, llama3.2:3b' },
      { id: 'cli-claude-code', ready: false, text: 'Claude Code is on your PATH, but not ready.', detail: 'Not logged in · Please run /login' },
      { id: 'cli-codex', ready: true, text: 'Codex is on your PATH and signed in.', detail: '/usr/bin/codex' },
      { id: 'key-OPENAI_API_KEY', ready: true, text: 'OPENAI_API_KEY is set, so OpenAI is connected.' },
    ]);
  });
  it('says what was not found', () => {
    const lines = foundLines(none);
    expect(lines.map((l) => l.text)).toEqual(['Ollama is not running on 127.0.0.1:11434.', 'No coding-agent CLI (Claude Code, Codex, Gemini CLI) is on your PATH.']);
    expect(canChat(none)).toBe(false);
  });
  it('an Ollama with no model cannot chat yet', () => {
    const f = { ...none, ollama: { running: true, address: '127.0.0.1:11434', models: [] } };
    expect(foundLines(f)[0]).toMatchObject({ ready: false, text: 'Ollama is running on 127.0.0.1:11434, but has no model yet.' });
    expect(canChat(f)).toBe(false);
  });
});
