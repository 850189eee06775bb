import { describe, expect, it, vi } from 'vitest';
import { EventType, MessageKind } from '../backend/contract';
import { ApiError } from '../backend/error';
import { ChatsStore } from './store.svelte';
import { chatMethods, makeConversation, makeMessage } from './fixture';
import type { Backend } from '../backend/backend';

function backend(over: Partial<ReturnType<typeof chatMethods>> = {}): Backend {
  const no = () => Promise.reject(new Error('not in this test'));
  return {
    listTasks: no,
    createTask: no,
    getTask: no,
    readOutput: no,
    stopTask: no,
    retryTask: no,
    resumeTask: no,
    openFolder: no,
    deleteTask: no,
    answerTask: no,
    approvals: no,
    doctor: no,
    preferences: no,
    setPreferences: no,
    saveBackup: no,
    removeWorktree: no,
    subscribe: () => () => {},
    ...chatMethods(),
    ...over,
  };
}

describe('ChatsStore', () => {
  it('keeps the highest rev of each chat', () => {
    const s = new ChatsStore(backend());
    s.apply({ type: EventType.ConversationChanged, conversation: makeConversation({ rev: 3, title: 'three' }) });
    s.apply({ type: EventType.ConversationChanged, conversation: makeConversation({ rev: 2, title: 'two' }) });
    expect(s.byId.get('c1')?.title).toBe('three');
    s.apply({ type: EventType.ConversationChanged, conversation: makeConversation({ rev: 4, title: 'four' }) });
    expect(s.byId.get('c1')?.title).toBe('four');
  });

  it('appends deltas by message id and replaces them with the stored message', async () => {
    const s = new ChatsStore(backend());
    const d = s.detail('c1');
    await Promise.resolve();
    s.apply({ type: EventType.MessageDelta, delta: { conversationId: 'c1', messageId: 'r', text: 'Hel' } });
    s.apply({ type: EventType.MessageDelta, delta: { conversationId: 'c1', messageId: 'r', text: 'lo' } });
    s.apply({ type: EventType.MessageDelta, delta: { conversationId: 'other', messageId: 'r', text: 'x' } });
    expect(d.streaming.get('r')).toBe('Hello');
    s.apply({ type: EventType.MessageAdded, message: makeMessage({ id: 'r', seq: 2, kind: MessageKind.Assistant, text: 'Hello!' }) });
    expect(d.streaming.has('r')).toBe(false);
    expect(d.messages.map((m) => m.text)).toEqual(['Hello!']);
    // A late delta of a stored reply is dropped; a repeated message is kept once.
    s.apply({ type: EventType.MessageDelta, delta: { conversationId: 'c1', messageId: 'r', text: 'late' } });
    s.apply({ type: EventType.MessageAdded, message: makeMessage({ id: 'r', seq: 2, kind: MessageKind.Assistant, text: 'Hello!' }) });
    expect(d.streaming.size).toBe(0);
    expect(d.messages).toHaveLength(1);
    s.apply({ type: EventType.MessageAdded, message: makeMessage({ id: 'u', seq: 1 }) });
    expect(d.messages.map((m) => m.seq)).toEqual([1, 2]);
  });

  it('loads a chat, merging what arrived meanwhile', async () => {
    const getConversation = vi.fn(async () => ({ conversation: makeConversation({ rev: 5 }), messages: [makeMessage({ seq: 1 })], more: true }));
    const s = new ChatsStore(backend({ getConversation }));
    const d = s.detail('c1');
    s.apply({ type: EventType.MessageAdded, message: makeMessage({ id: 'm2', seq: 2 }) });
    await vi.waitFor(() => expect(d.loaded).toBe(true));
    expect(d.messages.map((m) => m.seq)).toEqual([1, 2]);
    expect(d.more).toBe(true);
    expect(s.byId.get('c1')?.rev).toBe(5);
  });

  it('says "Already answered." when an answer lost the race', async () => {
    const answerAsk = vi.fn(async () => {
      throw new ApiError('conflict', 'ask is not waiting', 409);
    });
    const s = new ChatsStore(backend({ answerAsk }));
    await s.answer('c1', 'a1', true);
    expect(s.errors.get('c1')).toBe('Already answered.');
  });

  it('sends a message and shows it at once', async () => {
    const s = new ChatsStore(backend({ sendMessage: vi.fn(async () => makeMessage({ seq: 1, text: 'hi there' })) }));
    const c = await s.create({ mode: 'ask' });
    await s.send(c.id, 'hi there');
    expect(s.details.get(c.id)?.messages.map((m) => m.text)).toEqual(['hi there']);
  });
});
