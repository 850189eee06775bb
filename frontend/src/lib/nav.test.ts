import { describe, expect, it } from 'vitest';
import { Page, chatOf, pageOf } from './nav.svelte';

describe('pageOf', () => {
  it('reads hashes and app links', () => {
    expect(pageOf('#approvals')).toBe(Page.Approvals);
    expect(pageOf('/tasks')).toBe(Page.Tasks);
    expect(pageOf('/doctor')).toBe(Page.Doctor);
    expect(pageOf('#settings?x=1')).toBe(Page.Settings);
  });

  it('falls back to the tasks page', () => {
    expect(pageOf('')).toBe(Page.Tasks);
    expect(pageOf('#nope')).toBe(Page.Tasks);
  });
});

describe('chatOf', () => {
  it('reads the chat of #chat/ID, and none for a new chat', () => {
    expect(pageOf('#chat/abc')).toBe(Page.Chat);
    expect(pageOf('#providers')).toBe(Page.Providers);
    expect(pageOf('#welcome')).toBe(Page.Welcome);
    expect(chatOf('#chat/a%20b')).toBe('a b');
    expect(chatOf('#chat')).toBe('');
    expect(chatOf('#tasks')).toBe('');
  });
});
