// Contract records with sensible defaults, and a Backend double's chat
// methods, for the tests of every folder: they sit here, under them all, so
// that no folder's tests import another folder that imports it back.

import { vi } from 'vitest';
import type { Backend } from './backend';
import { ApiError } from './error';
import { Kind, Mode, MessageKind, Status, type AppEvent, type Conversation, type ConversationList, type Message, type Preferences, type Task, type TaskList, type TaskQuery } from './contract';

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
    host: '',
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

/** The slots a list reports. */
export const concurrent: TaskList['concurrent'] = { background: { running: 0, limit: 3 }, helper: { running: 0, limit: 4 } };

/** A Backend double whose answers each test sets; it records what was asked. */
export function mockBackend(tasks: Task[] = []) {
  let onEvent: (e: AppEvent) => void = () => {};
  let onReconnect: () => void = () => {};
  const b = {
    list: tasks,
    /** The overview's cursor of the next finished page. */
    next: '',
    /** The pages after the first, by cursor. */
    pages: {} as Record<string, () => { tasks: Task[]; next: string }>,
    listTasks: vi.fn(async (q?: TaskQuery): Promise<TaskList> => {
      const page = q?.cursor !== undefined ? b.pages[q.cursor] : undefined;
      if (page) return { ...page(), counts: countsOf(b.list), concurrent };
      return { tasks: b.list, next: b.next, counts: countsOf(b.list), concurrent };
    }),
    createTask: vi.fn(async (): Promise<Task> => makeTask({ id: 'new' })),
    getTask: vi.fn(async (id: string): Promise<Task> => {
      const t = b.list.find((x) => x.id === id);
      if (!t) throw new ApiError('not_found', 'no such task', 404);
      return t;
    }),
    readOutput: vi.fn(async () => ({ data: '', next: 0 })),
    stopTask: vi.fn(async (id: string): Promise<Task> => makeTask({ id, status: Status.Stopped, rev: 10 })),
    retryTask: vi.fn(async (id: string): Promise<Task> => makeTask({ id, status: Status.Queued, rev: 10 })),
    resumeTask: vi.fn(async (id: string): Promise<Task> => makeTask({ id, status: Status.Queued, rev: 10 })),
    openFolder: vi.fn(async () => undefined),
    deleteTask: vi.fn(async (): Promise<void> => {}),
    answerTask: vi.fn(async (id: string): Promise<Task> => makeTask({ id, status: Status.Running, rev: 10 })),
    approvals: vi.fn(async () => []),
    doctor: vi.fn(async () => ({ ok: true, checks: [] })),
    browser: false,
    about: vi.fn(async () => ({ userHome: '/home/me', version: '0.1.0' })),
    pushKey: vi.fn(async () => ({ publicKey: 'BKey' })),
    subscribePush: vi.fn(async (sub: { endpoint: string; keys: { p256dh: string; auth: string } }) => ({ ...sub, addedAt: '2026-01-01T00:00:00Z' })),
    unsubscribePush: vi.fn(async () => undefined),
    search: vi.fn(async () => ({ hits: [], next: '', total: 0, indexing: null })),
    activity: vi.fn(async () => ({ days: [], next: '' })),
    listRoutines: vi.fn(async () => ({ routines: [], zone: 'Europe/Paris' })),
    createRoutine: vi.fn(async () => {
      throw new ApiError('invalid', 'not in this test', 400);
    }),
    getRoutine: vi.fn(async () => {
      throw new ApiError('not_found', 'no such routine', 404);
    }),
    patchRoutine: vi.fn(async () => {
      throw new ApiError('not_found', 'no such routine', 404);
    }),
    deleteRoutine: vi.fn(async (): Promise<void> => {}),
    runRoutine: vi.fn(async (): Promise<Task> => makeTask({ id: 'run' })),
    listHosts: vi.fn(async () => ({ hosts: [], runner: '0.1.0' })),
    getHost: vi.fn(async () => {
      throw new ApiError('not_found', 'no such host', 404);
    }),
    putHost: vi.fn(async () => {
      throw new ApiError('invalid', 'not in this test', 400);
    }),
    deleteHost: vi.fn(async (): Promise<void> => {}),
    testHost: vi.fn(async () => {
      throw new ApiError('not_found', 'no such host', 404);
    }),
    acceptHostKey: vi.fn(async () => {
      throw new ApiError('conflict', 'no key waits', 409);
    }),
    preferences: vi.fn(async () => ({ limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 })),
    setPreferences: vi.fn(async (p: Preferences) => p),
    saveBackup: vi.fn(async (withOutput: boolean) => ({ path: '', name: 'conch-backup.db', bytes: 1, tar: withOutput })),
    takeOpen: vi.fn(async () => ''),
    removeWorktree: vi.fn(async (id: string): Promise<Task> => makeTask({ id, status: Status.Done, rev: 12 })),
    fetchTask: vi.fn(async (id: string) => ({ task: makeTask({ id, status: Status.Done, rev: 13 }), repo: '/home/me/app', branch: `conch/${id}`, commits: 1 })),
    ...chatMethods(),
    subscribe: vi.fn((ev: (e: AppEvent) => void, rc: () => void) => {
      onEvent = ev;
      onReconnect = rc;
      return () => {};
    }),
    emit: (e: AppEvent) => onEvent(e),
    reconnect: () => onReconnect(),
  };
  return b satisfies Backend;
}

/** The counts the server would give for list. */
function countsOf(list: Task[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const t of list) c[t.status] = (c[t.status] ?? 0) + 1;
  return c;
}
