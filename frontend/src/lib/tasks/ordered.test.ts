import { describe, expect, it } from 'vitest';
import { Status, type Task } from '../backend/contract';
import { makeTask } from './fixture';
import { Group } from './language';
import { groupTasks } from './model';
import { OrderedGroups, prefixLength } from './ordered';

const statuses = [Status.Queued, Status.Running, Status.NeedsYou, Status.Done, Status.Failed, Status.Stopped];
const at = (min: number): string => new Date(Date.UTC(2026, 10, 30, 6, min)).toISOString();

/** A small deterministic random source, so a failure replays. */
function rng(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

describe('OrderedGroups', () => {
  it('keeps every group in the order a full sort gives, through random changes', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = rng(seed);
      const o = new OrderedGroups();
      const held = new Map<string, Task>();
      for (let step = 0; step < 400; step++) {
        const id = `t${Math.floor(r() * 40)}`;
        if (r() < 0.15) {
          o.remove(id);
          held.delete(id);
        } else {
          // Few distinct times, so many tasks tie and the id decides.
          const m = Math.floor(r() * 6);
          const t = makeTask({
            id,
            status: statuses[Math.floor(r() * statuses.length)] as Status,
            createdAt: at(m),
            startedAt: r() < 0.5 ? at(m + 1) : null,
            endedAt: r() < 0.7 ? at(m + 2) : null,
            parentConversationId: ['', 'c1', 'c2'][Math.floor(r() * 3)] as string,
            rev: step,
          });
          o.put(t);
          held.set(id, t);
        }
        const want = groupTasks(held.values());
        const got = o.snapshot();
        for (const g of [Group.NeedsYou, Group.Working, Group.Waiting, Group.Finished]) {
          expect(got[g].map((t) => t.id), `seed ${seed}, step ${step}, ${g}`).toEqual(want[g].map((t) => t.id));
        }
        expect(o.size).toBe(held.size);
        const parents = new Map<string, number>();
        for (const t of want[Group.Finished]) if (t.parentConversationId !== '') parents.set(t.parentConversationId, (parents.get(t.parentConversationId) ?? 0) + 1);
        expect(new Map([...o.finishedParents()].sort()), `seed ${seed}, step ${step}, chats`).toEqual(new Map([...parents].sort()));
      }
    }
  });

  it('answers a group that did not change as the same array', () => {
    const o = new OrderedGroups();
    o.put(makeTask({ id: 'q', status: Status.Queued }));
    o.put(makeTask({ id: 'd', status: Status.Done, endedAt: at(5) }));
    const first = o.snapshot();
    o.put(makeTask({ id: 'd2', status: Status.Done, endedAt: at(6) }));
    const second = o.snapshot();
    expect(second[Group.Waiting]).toBe(first[Group.Waiting]);
    expect(second[Group.Finished]).not.toBe(first[Group.Finished]);
    expect(second[Group.Finished].map((t) => t.id)).toEqual(['d2', 'd']);
    expect(o.snapshot()).toBe(second);
    // A snapshot given out does not change under its holder.
    o.remove('d');
    expect(second[Group.Finished].map((t) => t.id)).toEqual(['d2', 'd']);
    // The chats of the finished tasks stay the same map through a change that leaves them be.
    const chats = o.finishedParents();
    o.put(makeTask({ id: 'd3', status: Status.Done, endedAt: at(7) }));
    expect(o.finishedParents()).toBe(chats);
    o.put(makeTask({ id: 'd4', status: Status.Done, endedAt: at(8), parentConversationId: 'c1' }));
    expect(o.finishedParents()).not.toBe(chats);
    expect([...o.finishedParents()]).toEqual([['c1', 1]]);
    o.put(makeTask({ id: 'd4', status: Status.Queued, parentConversationId: 'c1' }));
    expect([...o.finishedParents()]).toEqual([]);
    o.remove('nobody');
    o.clear();
    expect(o.snapshot()[Group.Finished]).toEqual([]);
    expect(o.size).toBe(0);
  });
});

describe('prefixLength', () => {
  it('finds where the tasks that pass end', () => {
    const list = [5, 4, 4, 3, 1].map((n, i) => makeTask({ id: `t${i}`, outputBytes: n }));
    expect(prefixLength(list, (t) => t.outputBytes >= 4)).toBe(3);
    expect(prefixLength(list, (t) => t.outputBytes >= 9)).toBe(0);
    expect(prefixLength(list, () => true)).toBe(5);
    expect(prefixLength([], () => true)).toBe(0);
  });
});
