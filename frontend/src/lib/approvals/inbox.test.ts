import { describe, expect, it } from 'vitest';
import { Status } from '../backend/contract';
import { makeConversation, makeTask } from '../backend/fixture';
import { Inbox } from './inbox.svelte';

describe('Inbox', () => {
  it('holds the tasks’ and the chats’ pending questions, oldest first', () => {
    const ask = (id: string, at: string) => ({ id, tool: 'bash', detail: 'Run?', askedAt: at, expiresAt: '2026-11-30T09:00:00Z' });
    const tasks = [makeTask({ id: 'b', status: Status.NeedsYou, ask: ask('k2', '2026-11-30T07:00:00Z') }), makeTask({ id: 'a', status: Status.NeedsYou, ask: ask('k1', '2026-11-30T06:00:00Z') })];
    const chats = [makeConversation({ id: 'c1', title: 'Fix', ask: ask('q1', '2026-11-30T06:30:00Z') }), makeConversation({ id: 'c2' })];
    const inbox = new Inbox(() => tasks, () => chats);
    expect(inbox.tasks.map((a) => a.taskId)).toEqual(['a', 'b']);
    expect(inbox.chats.map((q) => q.conversationId)).toEqual(['c1']);
  });
});
