import { describe, expect, it } from 'vitest';
import { Status } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { StatusFilter, byDay, chatChoices, dayLabel, emptyFilter, filterTasks, formatAgo, isFiltering, noChat } from './finished';

const now = new Date(2026, 11, 1, 15, 0, 0).getTime(); // Tue 1 Dec 2026, 15:00 local
const at = (d: number, h: number, m = 0) => new Date(2026, 11, d, h, m).toISOString();

describe('formatAgo', () => {
  it('says how long ago, coarser as it gets older', () => {
    expect(formatAgo(new Date(now - 20_000).toISOString(), now)).toBe('just now');
    expect(formatAgo(new Date(now - 5 * 60_000).toISOString(), now)).toBe('5m ago');
    expect(formatAgo(new Date(now - 2 * 3600_000 - 60_000).toISOString(), now)).toBe('2h ago');
    expect(formatAgo(new Date(now - 3 * 86400_000).toISOString(), now)).toBe('3d ago');
    expect(formatAgo(new Date(now - 30 * 86400_000).toISOString(), now)).not.toMatch(/ago/);
    expect(formatAgo(null, now)).toBe('');
  });
});

describe('byDay', () => {
  it('heads each local day, newest first, keeping the order', () => {
    const tasks = [
      makeTask({ id: 'a', status: Status.Done, endedAt: at(1, 14) }),
      makeTask({ id: 'b', status: Status.Done, endedAt: at(1, 0, 5) }),
      makeTask({ id: 'c', status: Status.Failed, endedAt: at(0, 23) }),
      makeTask({ id: 'd', status: Status.Done, endedAt: at(-10, 9) }),
    ];
    const g = byDay(tasks, now);
    expect(g.map((d) => [d.day, d.tasks.map((t) => t.id)])).toEqual([
      ['Today', ['a', 'b']],
      ['Yesterday', ['c']],
      [dayLabel(new Date(2026, 11, -10, 9).getTime(), now), ['d']],
    ]);
    expect(dayLabel(new Date(2026, 10, 28, 9).getTime(), now)).toBe(new Date(2026, 10, 28).toLocaleDateString(undefined, { weekday: 'long' }));
  });
});

describe('filterTasks', () => {
  const list = [
    makeTask({ id: 'ok', title: 'Run the billing tests', status: Status.Done, parentConversationId: 'c1', summary: 'Tests 31 passed' }),
    makeTask({ id: 'no', title: 'Delete build', status: Status.Failed, error: 'You declined' }),
    makeTask({ id: 'bad', title: 'Build', status: Status.Failed, error: 'exited with code 2', parentConversationId: 'c2' }),
    makeTask({ id: 'stop', title: 'Café menu', status: Status.Stopped }),
  ];
  const ids = (f: Partial<typeof emptyFilter>) => filterTasks(list, { ...emptyFilter, ...f }).map((t) => t.id);
  it('lets everything through when empty', () => {
    expect(ids({})).toEqual(['ok', 'no', 'bad', 'stop']);
    expect(isFiltering(emptyFilter)).toBe(false);
    expect(isFiltering({ ...emptyFilter, text: 'x' })).toBe(true);
  });
  it('filters by outcome, telling declined from failed', () => {
    expect(ids({ status: StatusFilter.Failed })).toEqual(['bad']);
    expect(ids({ status: StatusFilter.Declined })).toEqual(['no']);
    expect(ids({ status: StatusFilter.Stopped })).toEqual(['stop']);
  });
  it('filters by chat, or by no chat', () => {
    expect(ids({ chat: 'c2' })).toEqual(['bad']);
    expect(ids({ chat: noChat })).toEqual(['no', 'stop']);
  });
  it('matches every word in title, summary or error, ignoring case and accents', () => {
    expect(ids({ text: 'billing 31' })).toEqual(['ok']);
    expect(ids({ text: 'cafe' })).toEqual(['stop']);
    expect(ids({ text: 'build code' })).toEqual(['bad']);
  });
  it('lists the chats tasks came from, by title', () => {
    expect(chatChoices(list.map((t) => t.parentConversationId), (id) => (id === 'c1' ? 'Zed' : 'Alpha'))).toEqual([
      { id: 'c2', title: 'Alpha' },
      { id: 'c1', title: 'Zed' },
    ]);
  });
});
