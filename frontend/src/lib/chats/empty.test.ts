import { describe, expect, it } from 'vitest';
import { connectLine, localLine } from './empty';
import { ollamaOf } from './providers';

const p = (id: string, name: string, ready = true, reason = '') => ({ id, name, ready, reason });

describe('ollamaOf', () => {
  it('finds Ollama by its id or its name, whatever the case', () => {
    expect(ollamaOf([p('openai', 'OpenAI'), p('ollama', 'Ollama')])?.id).toBe('ollama');
    expect(ollamaOf([p('desk', 'My OLLAMA box')])?.id).toBe('desk');
    expect(ollamaOf([p('Ollama-2', 'Second')])?.id).toBe('Ollama-2');
    expect(ollamaOf([p('lmstudio', 'LM Studio')])).toBeUndefined();
  });
});

describe('what an empty chat says', () => {
  it('points to Ollama when it was found, else to the list’s error, else to the choices', () => {
    expect(connectLine([p('ollama', 'Ollama', false, 'it does not answer')], 'ignored')).toBe('Ollama was found on this computer, but: it does not answer.');
    expect(connectLine([p('ollama', 'Ollama', false)], '')).toBe('Ollama was found on this computer.');
    expect(connectLine([], 'The providers could not be listed.')).toBe('The providers could not be listed.');
    expect(connectLine([p('openai', 'OpenAI', false)], '')).toBe('Run Ollama or LM Studio on this computer, or add an OpenAI-compatible URL or an API key.');
  });

  it('says a chat runs on Ollama only when that is its provider and it is ready', () => {
    const list = [p('ollama', 'Ollama')];
    expect(localLine(list, 'ollama')).toBe('Ollama is running on this computer; this chat uses it.');
    expect(localLine(list, 'openai')).toBe('');
    expect(localLine([p('ollama', 'Ollama', false)], 'ollama')).toBe('');
    expect(localLine([], '')).toBe('');
  });
});
