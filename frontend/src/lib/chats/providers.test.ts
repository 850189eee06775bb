import { describe, expect, it } from 'vitest';
import { editConfig, editForm, isFree, needsKey, pickerLabel, presets } from './providers';

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

describe('presets', () => {
  it('start on the common choices, Custom last', () => {
    expect(presets[0]?.id).toBe('ollama');
    expect(presets.slice(1, 3).map((p) => p.id)).toEqual(['openai', 'anthropic']);
    expect(presets[presets.length - 1]?.id).toBe('custom');
  });
});

describe('editing a provider', () => {
  const custom = { kind: 'openai', name: 'Box', ready: true, reason: '', keySet: true, baseUrl: 'http://10.0.0.2:8080/v1', models: { default: 'm1' } };
  const envOpenAI = { kind: 'openai', name: 'OpenAI', preset: 'openai', ready: false, reason: 'Could not reach OpenAI', keySet: true, baseUrl: 'https://api.openai.com/v1', models: { default: 'gpt-4.1' } };

  it('fills the form from the provider, never with a key', () => {
    expect(editForm(custom)).toEqual({ name: 'Box', baseUrl: 'http://10.0.0.2:8080/v1', apiKey: '', model: 'm1' });
  });
  it('saves the whole configuration, keeping the key unless one is typed', () => {
    expect(editConfig(custom, { ...editForm(custom), model: 'm2' })).toEqual({ kind: 'openai', name: 'Box', baseUrl: 'http://10.0.0.2:8080/v1', model: 'm2' });
    expect(editConfig(custom, { ...editForm(custom), apiKey: ' sk-new ' })).toMatchObject({ apiKey: 'sk-new' });
  });
  it('leaves a preset’s own URL to the preset', () => {
    expect(editConfig(envOpenAI, { ...editForm(envOpenAI), model: 'gpt-5' })).toEqual({ kind: 'openai', preset: 'openai', name: 'OpenAI', model: 'gpt-5' });
    expect(editConfig(envOpenAI, { ...editForm(envOpenAI), baseUrl: 'https://proxy.example/v1' })).toMatchObject({ baseUrl: 'https://proxy.example/v1' });
  });
  it('gives a CLI neither URL nor key', () => {
    const cli = { kind: 'codex', name: 'Codex', ready: false, reason: 'Not logged in', keySet: false, models: { default: 'gpt-5-codex' } };
    expect(editConfig(cli, { name: 'Codex', baseUrl: 'http://x', apiKey: 'k', model: 'gpt-5' })).toEqual({ kind: 'codex', name: 'Codex', model: 'gpt-5' });
  });
  it('offers Add key to a provider not ready for want of one', () => {
    expect(needsKey({ ...envOpenAI, keySet: false })).toBe(true);
    expect(needsKey({ kind: 'anthropic', name: 'Anthropic', ready: false, reason: '', keySet: false, models: { default: '' } })).toBe(true);
    expect(needsKey({ ...custom, ready: false, keySet: false, reason: 'HTTP 401 Unauthorized' })).toBe(true);
    expect(needsKey({ ...custom, ready: false, keySet: false, reason: 'connection refused' })).toBe(false);
    expect(needsKey({ ...envOpenAI, ready: false })).toBe(false);
    expect(needsKey({ kind: 'claude-code', name: 'Claude Code', ready: false, reason: 'Not logged in', keySet: false, models: { default: '' } })).toBe(false);
  });
});
