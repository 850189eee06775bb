import { describe, expect, it } from 'vitest';
import { Status } from '../backend/contract';
import { makeConversation, makeTask } from '../backend/fixture';
import { loadedFinished, paletteChats, paletteTasks } from './tasks';

describe('paletteTasks', () => {
  it('lists the active tasks, the server’s finds and the newest loaded, each once, in their newest copy', () => {
    const run = makeTask({ id: 'r', status: Status.Running });
    const old = makeTask({ id: 'old', status: Status.Done, title: 'Deploy to staging' });
    const newer = makeTask({ id: 'old', status: Status.Done, title: 'Deploy to staging', rev: 4 });
    const f1 = makeTask({ id: 'f1', status: Status.Done });
    const live = new Map([['old', newer]]);
    const got = paletteTasks([run], [old, f1], [f1, makeTask({ id: 'f2', status: Status.Failed })], (id) => live.get(id));
    expect(got.map((t) => t.id)).toEqual(['r', 'old', 'f1', 'f2']);
    expect(got[1]?.rev).toBe(4);
  });

  it('looks through only the newest loaded finished tasks', () => {
    const many = Array.from({ length: loadedFinished + 50 }, (_, i) => makeTask({ id: `t${i}`, status: Status.Done }));
    expect(paletteTasks([], [], many, () => undefined)).toHaveLength(loadedFinished);
  });
});

describe('paletteChats', () => {
  it('lists the held chats, then the server’s finds of older ones, each once, in their newest copy', () => {
    const a = makeConversation({ id: 'a', title: 'Plan the move' });
    const b = makeConversation({ id: 'b', title: 'Old plan' });
    const bNewer = makeConversation({ id: 'b', title: 'Old plan, renamed', rev: 9 });
    const got = paletteChats([a], [a, b], (id) => (id === 'b' ? bNewer : undefined));
    expect(got.map((c) => c.id)).toEqual(['a', 'b']);
    expect(got[1]?.title).toBe('Old plan, renamed');
  });
});
