import { describe, expect, it } from 'vitest';
import { MessageKind } from '../backend/contract';
import { makeConversation, makeMessage } from '../backend/fixture';
import { chatTitle, foldMessages, formatUSD, groupByDay, limitSentence } from './model';

describe('groupByDay', () => {
  it('puts chats under Today, Yesterday and Older, newest first', () => {
    const now = new Date(2026, 10, 30, 9, 0);
    const at = (d: number, h: number) => new Date(2026, 10, d, h).toISOString();
    const groups = groupByDay(
      [
        makeConversation({ id: 'old', updatedAt: at(20, 12) }),
        makeConversation({ id: 'y', updatedAt: at(29, 23) }),
        makeConversation({ id: 't1', updatedAt: at(30, 1) }),
        makeConversation({ id: 't2', updatedAt: at(30, 8) }),
      ],
      now,
    );
    expect(groups.map((g) => [g.day, g.chats.map((c) => c.id)])).toEqual([
      ['Today', ['t2', 't1']],
      ['Yesterday', ['y']],
      ['Older', ['old']],
    ]);
    expect(groupByDay([], now)).toEqual([]);
  });

  it('calls an untitled chat "New chat"', () => {
    expect(chatTitle({ title: '' })).toBe('New chat');
    expect(chatTitle({ title: 'Fix go.mod' })).toBe('Fix go.mod');
  });
});

describe('foldMessages', () => {
  const call = makeMessage({ seq: 2, kind: MessageKind.ToolCall, toolCall: { id: 'k1', name: 'read_file', arguments: { path: 'go.mod' }, effect: 'none', title: 'Read go.mod' } });
  const result = makeMessage({ seq: 3, kind: MessageKind.ToolResult, toolResult: { callId: 'k1', name: 'read_file', output: 'module x', isError: false } });
  const ask = { id: 'a1', callId: 'k2', tool: 'write_file', detail: 'Write a.txt', askedAt: '', expiresAt: '' };

  it('folds a tool result into the step with its call id', () => {
    const items = foldMessages([makeMessage({ seq: 1, text: 'read it' }), call, result], new Map(), null);
    expect(items.map((i) => i.kind)).toEqual(['user', 'step']);
    const step = items[1];
    expect(step?.kind === 'step' && step.result?.output).toBe('module x');
  });

  it('marks only the conversation’s current ask pending; an answer settles it', () => {
    const q = makeMessage({ seq: 4, kind: MessageKind.Ask, ask });
    let items = foldMessages([q], new Map(), 'a1');
    expect(items).toMatchObject([{ kind: 'ask', pending: true }]);
    items = foldMessages([q], new Map(), null);
    expect(items).toMatchObject([{ kind: 'ask', pending: false }]);
    items = foldMessages([q, makeMessage({ seq: 5, kind: MessageKind.Ask, ask: { ...ask, answer: 'allowed' } })], new Map(), 'a1');
    expect(items).toMatchObject([{ kind: 'ask', pending: false, ask: { answer: 'allowed' } }]);
  });

  it('shows streamed replies after the stored ones, until stored', () => {
    const stream = new Map([['r1', 'Hel']]);
    expect(foldMessages([makeMessage({ seq: 1 })], stream, null)).toMatchObject([{ kind: 'user' }, { kind: 'assistant', text: 'Hel', streaming: true }]);
    const stored = makeMessage({ id: 'r1', seq: 2, kind: MessageKind.Assistant, text: 'Hello' });
    expect(foldMessages([makeMessage({ seq: 1 }), stored], stream, null)).toMatchObject([{ kind: 'user' }, { kind: 'assistant', text: 'Hello', streaming: false }]);
  });

  it('shows notices as notices', () => {
    expect(foldMessages([makeMessage({ seq: 1, kind: MessageKind.Notice, text: 'Stopped.' })], new Map(), null)).toEqual([{ kind: 'notice', key: 'm1', text: 'Stopped.' }]);
  });
});

describe('formatUSD', () => {
  it('shows dollars with cents', () => {
    expect(formatUSD(0)).toBe('$0.00');
    expect(formatUSD(1.234)).toBe('$1.23');
    expect(formatUSD(0.001)).toBe('<$0.01');
  });
  it('shows a coding agent\'s own steps as finished steps', () => {
    const items = foldMessages([makeMessage({ seq: 1, kind: MessageKind.Step, text: 'Ran go test ./...' })], new Map(), null);
    expect(items).toHaveLength(1);
    const step = items[0];
    expect(step?.kind === 'step' && step.call.title).toBe('Ran go test ./...');
    expect(step?.kind === 'step' && step.result?.isError).toBe(false);
  });
});

describe('limitSentence', () => {
  const now = new Date(2026, 10, 30, 12, 0);
  it('names the provider once and gives the reset in local time', () => {
    const until = new Date(2026, 10, 30, 15, 40);
    const s = limitSentence({ name: 'Claude Code', until: until.toISOString() }, now, 'en-GB');
    expect(s).toBe('Claude Code reached its usage limit. It resets at 15:40; switch to another provider, or send again then.');
    expect(s.match(/Claude/g)).toHaveLength(1);
    expect(s).not.toMatch(/\dT\d|Z\b/);
  });
  it('says the day when the reset is not today', () => {
    const until = new Date(2026, 11, 1, 9, 5);
    expect(limitSentence({ name: 'Codex CLI', until: until.toISOString() }, now, 'en-GB')).toContain('It resets at Tue 9:05;');
  });
  it('says what to do when the reset is unknown or past', () => {
    expect(limitSentence({ name: 'Codex CLI' }, now)).toBe('Codex CLI reached its usage limit. Switch to another provider, or wait and send again.');
    expect(limitSentence({ name: 'Codex CLI', until: new Date(2026, 10, 30, 11).toISOString() }, now)).toContain('has reset since');
  });
  it('folds a limit notice into its own item', () => {
    const items = foldMessages([makeMessage({ seq: 1, kind: MessageKind.Notice, text: 'x', limit: { provider: 'claude-code', name: 'Claude Code' } })], new Map(), null);
    expect(items).toMatchObject([{ kind: 'limit', limit: { provider: 'claude-code' } }]);
  });
});
