import { vi } from 'vitest';
import { Mode, MessageKind, type Conversation, type ConversationList, type Message } from '../backend/contract';

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
