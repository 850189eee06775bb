import { describe, expect, it } from 'vitest';
import { EventType, Kind, Status, type Task } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { applyEvent, badgeOf, chatOfTask, queuePositions } from './model';

const changed = (task: Task) => ({ type: EventType.TaskChanged, task }) as const;

describe('applyEvent', () => {
  it('keeps the highest rev and ignores older or equal copies', () => {
    const m = new Map<string, Task>();
    const gone = new Set<string>();
    expect(applyEvent(m, gone, changed(makeTask({ id: 'a', rev: 3, current: 'three' })))).toBe(true);
    expect(applyEvent(m, gone, changed(makeTask({ id: 'a', rev: 2, current: 'two' })))).toBe(false);
    expect(applyEvent(m, gone, changed(makeTask({ id: 'a', rev: 3, current: 'three again' })))).toBe(false);
    expect(m.get('a')?.current).toBe('three');
    expect(applyEvent(m, gone, changed(makeTask({ id: 'a', rev: 4, current: 'four' })))).toBe(true);
    expect(m.get('a')?.current).toBe('four');
  });

  it('deletes, and a late copy does not bring the task back', () => {
    const m = new Map<string, Task>();
    const gone = new Set<string>();
    applyEvent(m, gone, changed(makeTask({ id: 'a', rev: 1 })));
    expect(applyEvent(m, gone, { type: EventType.TaskDeleted, id: 'a' })).toBe(true);
    expect(m.has('a')).toBe(false);
    expect(applyEvent(m, gone, changed(makeTask({ id: 'a', rev: 9 })))).toBe(false);
    expect(m.has('a')).toBe(false);
  });
});

describe('queuePositions', () => {
  it('counts each kind in its own line, first come first served', () => {
    const pos = queuePositions([
      makeTask({ id: 'b2', kind: Kind.Background, createdAt: '2026-11-30T06:00:03Z' }),
      makeTask({ id: 'h1', kind: Kind.Helper, createdAt: '2026-11-30T06:00:02Z' }),
      makeTask({ id: 'b1', kind: Kind.Background, createdAt: '2026-11-30T06:00:01Z' }),
      makeTask({ id: 'r', kind: Kind.Background, status: Status.Running, createdAt: '2026-11-30T05:00:00Z' }),
      makeTask({ id: 'b3', kind: Kind.Background, createdAt: '2026-11-30T06:00:04Z' }),
    ]);
    expect(Object.fromEntries(pos)).toEqual({ b1: 1, b2: 2, b3: 3, h1: 1 });
  });
});

describe('badgeOf', () => {
  it('shows the needs-you count first', () => {
    expect(badgeOf({ [Status.NeedsYou]: 1, [Status.Running]: 2 })).toEqual({ count: 1, needsYou: true, label: '1 needs your OK' });
  });

  it('else the working count', () => {
    expect(badgeOf({ [Status.Running]: 2, [Status.Queued]: 1 })).toEqual({ count: 2, needsYou: false, label: '2 working' });
  });

  it('is absent when nothing works or asks', () => {
    expect(badgeOf({ [Status.Queued]: 1, [Status.Done]: 9000, [Status.NeedsYou]: 0 })).toBeNull();
  });

  it('counts the one needs-you number (chats’ questions too) when given it', () => {
    const c = { [Status.Running]: 1 };
    expect(badgeOf(c, 2)).toEqual({ count: 2, needsYou: true, label: '2 need your OK' });
    expect(badgeOf(c, 0)).toEqual({ count: 1, needsYou: false, label: '1 working' });
  });
});

describe('chatOfTask', () => {
  it('opens the chat a task came from, else its own, else none', () => {
    expect(chatOfTask(makeTask({ id: 'a', conversationId: 'own', parentConversationId: 'parent' }))).toBe('parent');
    expect(chatOfTask(makeTask({ id: 'a', conversationId: 'own' }))).toBe('own');
    expect(chatOfTask(makeTask({ id: 'a' }))).toBe('');
  });
});
