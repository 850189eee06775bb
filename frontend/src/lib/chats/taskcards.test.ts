import { describe, expect, it } from 'vitest';
import { Kind, MessageKind, Status, type TaskSnapshot } from '../backend/contract';
import { makeMessage, makeTask } from '../backend/fixture';
import { foldMessages } from './model';
import { bannerLead, bannerText, cardView, groupCost, groupTally, helpersLabel, itemOf, type TaskCardItem } from './taskcards';

function event(seq: number, ev: Partial<TaskSnapshot> & Pick<TaskSnapshot, 'taskId'>, at = `2026-11-30T08:00:${String(seq).padStart(2, '0')}Z`) {
  return makeMessage({
    seq,
    kind: MessageKind.TaskEvent,
    text: '',
    createdAt: at,
    taskEvent: { taskKind: Kind.Background, status: Status.Queued, title: 'Tidy the README', ...ev },
  });
}

describe('folding task events', () => {
  it('folds one task’s events into one card where the first one is, with the newest snapshot', () => {
    const items = foldMessages(
      [
        makeMessage({ seq: 1, text: 'tidy the README' }),
        event(2, { taskId: 't1' }),
        makeMessage({ seq: 3, text: 'meanwhile, what time is it?' }),
        event(4, { taskId: 't1', status: Status.Running }),
        makeMessage({ seq: 5, kind: MessageKind.Assistant, text: 'Nine.' }),
        event(6, { taskId: 't1', status: Status.Done, summary: 'Tidied.' }),
      ],
      new Map(),
      null,
    );
    expect(items.map((i) => i.kind)).toEqual(['user', 'task', 'user', 'assistant']);
    const card = items[1] as TaskCardItem;
    expect(card.key).toBe('m2');
    expect(card.event.status).toBe(Status.Done);
    expect(card.event.summary).toBe('Tidied.');
    expect(card.firstAt).toBe('2026-11-30T08:00:02Z');
    expect(card.startedAt).toBe('2026-11-30T08:00:04Z');
    expect(card.lastAt).toBe('2026-11-30T08:00:06Z');
  });

  it('shows a final event at its own place as the result that came back', () => {
    const items = foldMessages(
      [event(1, { taskId: 't1' }), makeMessage({ seq: 2, text: 'and?' }), event(3, { taskId: 't1', status: Status.Done, summary: '**3** files', final: true })],
      new Map(),
      null,
    );
    expect(items).toMatchObject([
      { kind: 'task', taskId: 't1', event: { status: Status.Queued } },
      { kind: 'user' },
      { kind: 'task-result', key: 'm3', taskId: 't1', event: { summary: '**3** files' } },
    ]);
  });

  it('shows an interrupted task once: its card says so, no result comes back until it finishes', () => {
    const items = foldMessages(
      [
        event(1, { taskId: 't1', status: Status.Running }),
        event(2, { taskId: 't1', status: Status.Interrupted }),
        event(3, { taskId: 't1', status: Status.Interrupted, final: true }),
        event(4, { taskId: 't1', status: Status.Running }),
        event(5, { taskId: 't1', status: Status.Done, summary: 'Summarised.', final: true }),
      ],
      new Map(),
      null,
    );
    expect(items).toMatchObject([
      { kind: 'task', taskId: 't1', event: { status: Status.Running } },
      { kind: 'task-result', key: 'm5', event: { status: Status.Done, summary: 'Summarised.' } },
    ]);
  });

  it('keeps two tasks apart', () => {
    const items = foldMessages([event(1, { taskId: 'a' }), event(2, { taskId: 'b' }), event(3, { taskId: 'a', status: Status.Running })], new Map(), null);
    expect(items.map((i) => (i.kind === 'task' ? [i.taskId, i.event.status] : i.kind))).toEqual([
      ['a', Status.Running],
      ['b', Status.Queued],
    ]);
  });

  it('puts the helpers of one group together, in part order, where the first one is', () => {
    const h = (seq: number, taskId: string, part: number, status: Status = Status.Queued) =>
      event(seq, { taskId, taskKind: Kind.Helper, groupId: 'g1', part, parts: 3, status, title: `Part ${part}` });
    const items = foldMessages(
      [
        makeMessage({ seq: 1, text: 'split this into three parts' }),
        h(2, 'h2', 2),
        h(3, 'h1', 1),
        h(4, 'h3', 3),
        h(5, 'h1', 1, Status.Running),
        event(6, { taskId: 'other' }),
        h(7, 'h2', 2, Status.Done),
      ],
      new Map(),
      null,
    );
    expect(items.map((i) => i.kind)).toEqual(['user', 'task-group', 'task']);
    const g = items[1];
    if (g?.kind !== 'task-group') throw new Error('no group');
    expect(g.key).toBe('m2');
    expect(g.cards.map((c) => [c.taskId, c.event.status])).toEqual([
      ['h1', Status.Running],
      ['h2', Status.Done],
      ['h3', Status.Queued],
    ]);
  });

  it('shows an old task event without a snapshot as a notice, and an empty one not at all', () => {
    expect(foldMessages([makeMessage({ seq: 1, kind: MessageKind.TaskEvent, text: 'Task started.' })], new Map(), null)).toEqual([{ kind: 'notice', key: 'm1', text: 'Task started.' }]);
    expect(foldMessages([makeMessage({ seq: 1, kind: MessageKind.TaskEvent, text: '' })], new Map(), null)).toEqual([]);
  });
});

describe('cardView', () => {
  const item = {
    taskId: 't1',
    event: { taskId: 't1', taskKind: Kind.Helper, status: Status.Done, title: 'Write the tests', by: 'Codex CLI', branch: 'conch/t1', note: 'n', part: 2, parts: 3 },
    firstAt: '2026-11-30T08:00:00Z',
    startedAt: '2026-11-30T08:00:05Z',
    lastAt: '2026-11-30T08:01:00Z',
  };

  it('prefers the live task', () => {
    const live = makeTask({
      id: 't1',
      kind: Kind.Helper,
      status: Status.Running,
      title: 'Write the tests',
      current: 'Running npm test',
      steps: ['Read go.mod'],
      by: 'Codex CLI',
      conversationId: 'tc1',
      part: 2,
      parts: 3,
      startedAt: '2026-11-30T08:00:03Z',
      worktree: { path: '/w', branch: 'conch/t1', base: 'main', kept: false, work: { changed: 3, untracked: 0, ahead: 2, behind: 0 } },
    });
    expect(cardView(item, live)).toMatchObject({
      status: Status.Running,
      current: 'Running npm test',
      steps: ['Read go.mod'],
      by: 'Codex CLI',
      branch: 'conch/t1',
      work: '3 changed · 2 commits ahead',
      conversationId: 'tc1',
      part: 2,
      parts: 3,
      startedAt: '2026-11-30T08:00:03Z',
      live: true,
    });
  });

  it('falls back to the newest event, timing it by the events', () => {
    expect(cardView(item, undefined)).toMatchObject({
      status: Status.Done,
      title: 'Write the tests',
      by: 'Codex CLI',
      branch: 'conch/t1',
      note: 'n',
      steps: [],
      conversationId: '',
      startedAt: '2026-11-30T08:00:05Z',
      endedAt: '2026-11-30T08:01:00Z',
      live: false,
    });
    const queued = { ...item, startedAt: null, event: { ...item.event, status: Status.Queued } };
    expect(cardView(queued, undefined)).toMatchObject({ startedAt: null, endedAt: null });
  });
});

describe('group words', () => {
  it('counts helpers by status', () => {
    expect(groupTally([{ status: Status.Running }, { status: Status.Done }, { status: Status.Running }])).toBe('2 working · 1 done');
    expect(groupTally([{ status: Status.NeedsYou }, { status: Status.Failed }])).toBe("1 needs your OK · 1 didn't finish");
    expect(groupTally([{ status: Status.Failed, error: 'You declined' }, { status: Status.Failed, error: 'exited with code 1' }])).toBe("1 didn't finish · 1 declined");
    expect(helpersLabel(3)).toBe('3 helpers');
    expect(helpersLabel(1)).toBe('1 helper');
  });
});

describe('banner', () => {
  it('says what a task chat is and where it came from', () => {
    expect(bannerText({ kind: Kind.Background }, 'Fix the build')).toBe('Background task from Fix the build');
    expect(bannerText({ kind: Kind.Helper, part: 2, parts: 3 }, 'Fix the build')).toBe('Helper 2 of 3 for Fix the build');
    expect(bannerLead({ kind: Kind.Helper })).toBe('Helper for');
    expect(bannerLead({ kind: Kind.Helper, part: 0, parts: 0 })).toBe('Helper for');
  });
});

describe('groupCost', () => {
  it('sums the estimates and names the cap', () => {
    expect(groupCost([{ estimate: 0.01, cap: 1.5 }, { estimate: 0.02, cap: 1.5 }, undefined])).toBe('about $0.03 to start · cap $1.50');
    expect(groupCost([{ estimate: 0, cap: 0 }])).toBe('');
    expect(groupCost([{ estimate: 0.001, cap: 0 }])).toBe('about <$0.01 to start');
  });
});

describe('itemOf', () => {
  it('makes the tasks page’s card of a record: the live record shows, and stands in once it is gone', () => {
    const t = makeTask({ id: 't9', title: 'Build it', status: Status.Running, startedAt: '2026-11-30T06:00:05Z', current: 'Running make' });
    const item = itemOf(t);
    expect(item).toMatchObject({ kind: 'task', key: 't9', taskId: 't9', firstAt: t.createdAt, startedAt: t.startedAt });
    expect(cardView(item, t)).toMatchObject({ taskId: 't9', title: 'Build it', status: Status.Running, current: 'Running make', live: true });
    expect(cardView(item, undefined)).toMatchObject({ taskId: 't9', title: 'Build it', status: Status.Running, current: '', live: false });
  });
});
