// Contract records with sensible defaults, and a Backend double's chat
// methods, for the tests of every folder: they sit here, under them all, so
// that no folder's tests import another folder that imports it back.

import { vi } from 'vitest';
import { Kind, Mode, MessageKind, Status, type Conversation, type ConversationList, type Message, type Task } from './contract';

/** A complete task record for tests, with fields overridden. */
export function makeTask(over: Partial<Task> & Pick<Task, 'id'>): Task {
  return {
    kind: Kind.Background,
    status: Status.Queued,
    title: over.id,
    text: over.id,
    conversationId: '',
    parentConversationId: '',
    groupId: '',
    // A command runs on the shell; a chat task on its chat's provider.
    provider: over.conversationId ? 'claude-code' : 'shell',
    model: '',
    by: '',
    mode: Mode.Ask,
    cwd: '/home/me',
    check: '',
    current: '',
    steps: null,
    summary: '',
    error: '',
    note: '',
    result: null,
    ask: null,
    worktree: null,
    wake: 'none',
    notified: false,
    paused: null,
    resume: null,
    outputBytes: 0,
    exitCode: null,
    pid: 0,
    createdAt: '2026-11-30T06:00:00Z',
    startedAt: null,
    endedAt: null,
    rev: 1,
    ...over,
  };
}

/** A conversation record with sensible defaults. */
export function makeConversation(over: Partial<Conversation> = {}): Conversation {
  return {
    id: 'c1',
    title: '',
    origin: { kind: 'chat' },
    provider: '',
    model: '',
    mode: Mode.Ask,
    cwd: '/home/me',
    tainted: false,
    spent: 0,
    limit: 0,
    running: false,
    ask: null,
    lastSeq: 0,
    createdAt: '2026-01-01T10:00:00Z',
    updatedAt: '2026-01-01T10:00:00Z',
    rev: 1,
    ...over,
  };
}

/** A message with sensible defaults. */
export function makeMessage(over: Partial<Message> = {}): Message {
  return {
    id: `m${over.seq ?? 1}`,
    conversationId: 'c1',
    seq: 1,
    kind: MessageKind.User,
    text: 'hi',
    createdAt: '2026-01-01T10:00:00Z',
    ...over,
  };
}

/** Chat and provider methods of a Backend double; each test overrides what it needs. */
export function chatMethods() {
  return {
    listConversations: vi.fn(async (): Promise<ConversationList> => ({ conversations: [], next: '' })),
    createConversation: vi.fn(async (): Promise<Conversation> => makeConversation()),
    getConversation: vi.fn(async () => ({ conversation: makeConversation(), messages: [] as Message[], more: false })),
    patchConversation: vi.fn(async (): Promise<Conversation> => makeConversation()),
    sendMessage: vi.fn(async (): Promise<Message> => makeMessage()),
    stopConversation: vi.fn(async (): Promise<Conversation> => makeConversation()),
    answerAsk: vi.fn(async (): Promise<Conversation> => makeConversation()),
    listProviders: vi.fn(async () => []),
    findProviders: vi.fn(async () => ({ ollama: { running: false, address: '127.0.0.1:11434', models: [] }, clis: [], keys: [] })),
    putProvider: vi.fn(async () => null),
    deleteProvider: vi.fn(async (): Promise<void> => {}),
  };
}
