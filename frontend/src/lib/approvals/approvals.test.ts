import { describe, expect, it } from 'vitest';
import { Status, type Ask, type Conversation } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { approvalsLabel, approvalsOf, chatQuestionsOf, inboxOf } from './approvals';

const ask = (id: string, askedAt: string): Ask => ({ id, tool: 'bash', detail: `Run \`${id}\`?`, askedAt, expiresAt: '2026-11-30T08:00:00Z' });

describe('approvalsOf', () => {
  it('lists only tasks that need the person and ask something, oldest question first', () => {
    const list = approvalsOf([
      makeTask({ id: 'late', status: Status.NeedsYou, ask: ask('late', '2026-11-30T06:30:00Z'), createdAt: '2026-11-30T06:00:00Z' }),
      makeTask({ id: 'run', status: Status.Running }),
      makeTask({ id: 'early', status: Status.NeedsYou, ask: ask('early', '2026-11-30T06:10:00Z'), createdAt: '2026-11-30T06:20:00Z', cwd: '/proj' }),
      makeTask({ id: 'noask', status: Status.NeedsYou, ask: null }),
      makeTask({ id: 'stale', status: Status.Done, ask: ask('stale', '2026-11-30T05:00:00Z') }),
    ]);
    expect(list.map((a) => a.taskId)).toEqual(['early', 'late']);
    expect(list[0]).toEqual({ kind: 'task', taskId: 'early', conversationId: '', title: 'early', cwd: '/proj', ask: ask('early', '2026-11-30T06:10:00Z') });
  });

  it('falls back to the text when the title is empty', () => {
    const [a] = approvalsOf([makeTask({ id: 'x', title: ' ', text: 'rm -rf build', status: Status.NeedsYou, ask: ask('x', '2026-11-30T06:00:00Z') })]);
    expect(a?.title).toBe('rm -rf build');
  });

  it('keeps the given order for questions asked at the same time', () => {
    const at = '2026-11-30T06:00:00Z';
    const list = approvalsOf(['b', 'a', 'c'].map((id) => makeTask({ id, status: Status.NeedsYou, ask: ask(id, at) })));
    expect(list.map((a) => a.taskId)).toEqual(['b', 'a', 'c']);
  });

  it('says how many wait', () => {
    expect(approvalsLabel(1)).toBe('1 question waits for your OK');
    expect(approvalsLabel(3)).toBe('3 questions wait for your OK');
  });
});

describe('chat questions in the inbox', () => {
  const conv = (id: string, askedAt: string | null, answer?: 'allowed') =>
    ({
      id, title: id === 'u' ? '' : `chat ${id}`, origin: { kind: 'chat' }, provider: 'p', model: '', mode: 'ask', cwd: '/w', tainted: false, spent: 0, limit: 0,
      running: true, lastSeq: 1, createdAt: '2026-11-30T05:00:00Z', updatedAt: '2026-11-30T05:00:00Z', rev: 1,
      ask: askedAt === null ? null : { id: `q-${id}`, callId: 'c', tool: 'write_file', detail: `Write ${id}?`, askedAt, expiresAt: '2026-11-30T08:00:00Z', ...(answer ? { answer } : {}) },
    }) as unknown as Conversation;
  it('lists only pending questions, titled, oldest first', () => {
    const qs = chatQuestionsOf([conv('b', '2026-11-30T06:02:00Z'), conv('none', null), conv('done', '2026-11-30T06:00:00Z', 'allowed'), conv('u', '2026-11-30T06:01:00Z')]);
    expect(qs.map((q) => q.conversationId)).toEqual(['u', 'b']);
    expect(qs[0]?.title).toBe('New chat');
    expect(qs[0]?.kind).toBe('chat');
  });
  it('merges with task questions by when they were asked', () => {
    const tasks = approvalsOf([makeTask({ id: 't', status: Status.NeedsYou, ask: ask('t', '2026-11-30T06:01:30Z') })]);
    const merged = inboxOf(tasks, chatQuestionsOf([conv('b', '2026-11-30T06:02:00Z'), conv('a', '2026-11-30T06:01:00Z')]));
    expect(merged.map((i) => `${i.kind}:${i.kind === 'task' ? i.taskId : i.conversationId}`)).toEqual(['chat:a', 'task:t', 'chat:b']);
  });
});
