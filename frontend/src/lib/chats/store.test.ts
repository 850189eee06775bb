import { describe, expect, it, vi } from 'vitest';
import { ApprovalKind, EventType, MessageKind, type Approval, type Conversation, type ConversationQuery } from '../backend/contract';
import { ApiError } from '../backend/error';
import { ChatsStore } from './store.svelte';
import { chatMethods, makeConversation, makeMessage } from '../backend/fixture';
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
    about: no,
    search: no,
    activity: no,
    browser: false,
    pushKey: no,
    subscribePush: no,
    unsubscribePush: no,
    listRoutines: no,
    createRoutine: no,
    getRoutine: no,
    patchRoutine: no,
    deleteRoutine: no,
    runRoutine: no,
    listHosts: no,
    getHost: no,
    putHost: no,
    deleteHost: no,
    testHost: no,
    acceptHostKey: no,
    preferences: no,
    setPreferences: no,
    saveBackup: no,
    takeOpen: no,
    removeWorktree: no,
    fetchTask: no,
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

  describe('the chat list, a page at a time', () => {
    // 250 chats, chat-0 changed last; the server's pages are cut by a cursor
    // that names the last chat given, as the Go side's do.
    const all: Conversation[] = Array.from({ length: 250 }, (_, i) =>
      makeConversation({ id: `chat-${i}`, title: `Chat ${i}`, updatedAt: new Date(Date.UTC(2026, 10, 1) - i * 60_000).toISOString() }),
    );
    function server(over: Partial<ReturnType<typeof chatMethods>> = {}, approvals: Approval[] = []) {
      const list = vi.fn(async (q: ConversationQuery = {}) => {
        const from = q.cursor ? all.findIndex((c) => c.id === q.cursor) + 1 : 0;
        const page = all.slice(from, from + (q.limit ?? 100));
        const last = page.at(-1);
        return { conversations: page, next: last && from + page.length < all.length ? last.id : '' };
      });
      const b = backend({ listConversations: list, ...over });
      b.approvals = async () => approvals;
      return { b, list };
    }

    it('loads the first page, the next ones on asking, and a reload brings back as many', async () => {
      const { b, list } = server();
      const s = new ChatsStore(b);
      await s.reload();
      expect(s.list).toHaveLength(100);
      expect(s.next).toBe('chat-99');
      await s.loadMore();
      expect(s.list).toHaveLength(200);
      list.mockClear();
      await s.reload();
      expect(list).toHaveBeenCalledTimes(2);
      expect(s.list).toHaveLength(200);
      await s.loadMore();
      expect(s.list).toHaveLength(250);
      expect(s.next).toBe('');
      await s.loadMore();
      expect(list).toHaveBeenCalledTimes(3); // nothing left to ask for
    });

    it('shows a chat held from further down only once the pages reach it', async () => {
      const { b } = server({ getConversation: vi.fn(async () => ({ conversation: all[180]!, messages: [], more: false })) });
      const s = new ChatsStore(b);
      await s.reload();
      await s.ensure('chat-180'); // a task chat's parent, named in its banner
      expect(s.byId.has('chat-180')).toBe(true);
      expect(s.list.some((c) => c.id === 'chat-180')).toBe(false);
      await s.loadMore();
      expect(s.list.some((c) => c.id === 'chat-180')).toBe(true);
    });

    it('fetches a chat that waits for an answer beyond the first page', async () => {
      const asking = { ...all[230]!, ask: { id: 'q', tool: 'run_command', detail: 'rm -rf build', askedAt: '2026-11-01T00:00:00Z' } } as Conversation;
      const get = vi.fn(async () => ({ conversation: asking, messages: [], more: false }));
      const { b } = server({ getConversation: get }, [{ kind: ApprovalKind.ApprovalChat, conversationId: 'chat-230', title: 'Chat 230', cwd: '/', ask: asking.ask! } as Approval]);
      const s = new ChatsStore(b);
      await s.reload();
      await vi.waitFor(() => expect(s.byId.get('chat-230')?.ask?.id).toBe('q'));
      expect(get).toHaveBeenCalledWith('chat-230', 0, 1);
    });

    it('a page asked for before a reload does not land after it', async () => {
      let release = () => {};
      const { b, list } = server();
      const s = new ChatsStore(b);
      await s.reload();
      list.mockImplementationOnce(async () => {
        await new Promise<void>((r) => (release = r));
        return { conversations: all.slice(100, 200), next: 'chat-199' };
      });
      const late = s.loadMore();
      await s.reload();
      release();
      await late;
      expect(s.next).toBe('chat-99');
      expect(s.loadingMore).toBe(false);
    });
  });
});
