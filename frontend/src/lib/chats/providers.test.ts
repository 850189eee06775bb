import { describe, expect, it } from 'vitest';
import { isFree, pickerLabel } from './providers';

const list = [
  { id: 'claude-code', kind: 'claude-code', name: 'Claude Code', category: 'coding-agent', models: { default: 'sonnet' } },
  { id: 'ollama', kind: 'openai', name: 'Ollama', category: 'local-model', models: { default: 'llama3.2' } },
  { id: 'shell', kind: 'shell', name: 'Shell', category: 'coding-agent', models: { default: '' } },
];

describe('pickerLabel', () => {
  it('names the provider, never its id, with the model', () => {
    expect(pickerLabel(list, 'claude-code', 'opus')).toBe('Claude Code · opus');
    expect(pickerLabel(list, 'claude-code', '')).toBe('Claude Code · sonnet');
    expect(pickerLabel(list, 'shell', '')).toBe('Shell');
  });
  it('says so for no provider or one no longer connected', () => {
    expect(pickerLabel(list, '', '')).toBe('No provider');
    expect(pickerLabel(list, 'gone-123', 'm')).toBe('A provider no longer connected · m');
  });
});

describe('isFree', () => {
  it('is true for local models and the shell only', () => {
    expect(isFree(list[1])).toBe(true);
    expect(isFree(list[2])).toBe(true);
    expect(isFree(list[0])).toBe(false);
    expect(isFree(undefined)).toBe(false);
  });
});
