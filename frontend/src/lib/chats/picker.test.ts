import { describe, expect, it } from 'vitest';
import { Mode } from '../backend/contract';
import { NewChat, folderProblem, modelsOf, parsePick, pickKey } from './picker.svelte';

describe('the provider picker', () => {
  it('puts a provider and a model in one value and reads them back', () => {
    expect(parsePick(pickKey('ollama', 'qwen3:8b'))).toEqual(['ollama', 'qwen3:8b']);
    expect(parsePick(pickKey('shell', ''))).toEqual(['shell', '']);
    expect(parsePick('')).toEqual(['', '']);
  });

  it('lists the default and fast models first when the list lacks them, and one entry for none', () => {
    expect(modelsOf({ models: { default: 'big', fast: 'small', list: ['mid'] } })).toEqual(['small', 'big', 'mid']);
    expect(modelsOf({ models: { default: 'big', fast: '', list: ['big', 'mid'] } })).toEqual(['big', 'mid']);
    expect(modelsOf({ models: { default: '', fast: '', list: null } })).toEqual(['']);
  });
});

describe('a new chat', () => {
  it('takes a full path or none for its folder', () => {
    expect(folderProblem('')).toBe('');
    expect(folderProblem('  /home/me/src ')).toBe('');
    expect(folderProblem('C:\\src')).toBe('');
    expect(folderProblem('src/app')).toBe('Use a full path starting with /, or leave it empty for your home folder.');
  });

  it('asks for only what was chosen', () => {
    const n = new NewChat();
    expect(n.request()).toEqual({ mode: Mode.Ask });
    n.provider = 'ollama';
    n.model = 'qwen3:8b';
    n.mode = Mode.Auto;
    n.cwd = ' /work ';
    expect(n.request()).toEqual({ mode: Mode.Auto, provider: 'ollama', model: 'qwen3:8b', cwd: '/work' });
    n.cwd = 'work';
    expect(n.problem).not.toBe('');
  });
});
