import { describe, expect, it } from 'vitest';
import { Draft } from './draft.svelte';

describe('Draft', () => {
  it('keeps one draft per chat', () => {
    let open = 'a';
    const d = new Draft(() => open);
    d.chat = 'half a thought for a';
    open = 'b';
    expect(d.chat).toBe('');
    expect(d.chatWritten).toBe(false);
    d.chat = 'for b';
    open = 'a';
    expect(d.chat).toBe('half a thought for a');
    expect(d.of('b')).toBe('for b');
  });

  it('keeps a new chat’s draft apart and clears one by its key', () => {
    let open = '';
    const d = new Draft(() => open);
    d.chat = 'first message';
    const from = d.chatKey;
    open = 'new-id';
    expect(d.chat).toBe('');
    d.set(from, '');
    open = '';
    expect(d.chat).toBe('');
  });

  it('keeps the tasks page’s draft apart from the chats’', () => {
    const d = new Draft(() => 'a');
    d.text = 'npm test';
    expect(d.chat).toBe('');
    expect(d.written).toBe(true);
  });
});
