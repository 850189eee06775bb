import { Kind, Mode, Status, type Task } from '../backend/contract';

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
