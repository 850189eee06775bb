import { describe, expect, it } from 'vitest';
import { Status, type Task } from '../backend/contract';
import { makeTask } from '../backend/fixture';
import { Group } from './language';
import type { Groups } from './model';
import { OrderedGroups, comparePlaces, placeOf, prefixLength } from './ordered';

const statuses = [Status.Queued, Status.Running, Status.NeedsYou, Status.Done, Status.Failed, Status.Stopped];
const at = (min: number): string => new Date(Date.UTC(2026, 10, 30, 6, min)).toISOString();

/** The groups of tasks put one by one. */
function grouped(tasks: Task[]): Groups {
  const o = new OrderedGroups();
  for (const t of tasks) o.put(t);
  return o.snapshot();
}

/** The groups by one full sort: what the ordered groups must agree with. */
function sortedAtOnce(tasks: Iterable<Task>): Groups {
  const g: Groups = { [Group.NeedsYou]: [], [Group.Working]: [], [Group.Waiting]: [], [Group.Finished]: [] };
  for (const t of tasks) g[placeOf(t).group].push(t);
  for (const list of Object.values(g) as Task[][]) list.sort((a, b) => comparePlaces(placeOf(a).key, a.id, placeOf(b).key, b.id));
  return g;
}

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
        const want = sortedAtOnce(held.values());
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

describe('OrderedGroups order', () => {
  it('puts each status in its group and orders each group', () => {
    const g = grouped([
      makeTask({ id: 'q2', status: Status.Queued, createdAt: '2026-11-30T06:00:02Z' }),
      makeTask({ id: 'done-old', status: Status.Done, endedAt: '2026-11-30T06:01:00Z' }),
      makeTask({ id: 'q1', status: Status.Queued, createdAt: '2026-11-30T06:00:01Z' }),
      makeTask({ id: 'run', status: Status.Running, startedAt: '2026-11-30T06:00:00Z' }),
      makeTask({ id: 'failed-new', status: Status.Failed, endedAt: '2026-11-30T06:03:00Z' }),
      makeTask({
        id: 'ask',
        status: Status.NeedsYou,
        ask: { id: 'k', tool: 'bash', detail: 'Run x?', askedAt: '2026-11-30T06:00:05Z', expiresAt: '2026-11-30T07:00:05Z' },
      }),
      makeTask({ id: 'stopped', status: Status.Stopped, endedAt: '2026-11-30T06:02:00Z' }),
      makeTask({ id: 'int', status: Status.Interrupted, endedAt: '2026-11-30T05:00:00Z' }),
    ]);
    const ids = (ts: Task[]) => ts.map((t) => t.id);
    expect(ids(g[Group.NeedsYou])).toEqual(['ask']);
    expect(ids(g[Group.Working])).toEqual(['run']);
    expect(ids(g[Group.Waiting])).toEqual(['q1', 'q2']);
    expect(ids(g[Group.Finished])).toEqual(['failed-new', 'stopped', 'done-old', 'int']);
  });

  it('compares times by instant, not by text', () => {
    // Go trims trailing zeros of fractions, so "…:00.5Z" sorts after "…:00.25Z" as text.
    const g = grouped([
      makeTask({ id: 'later', createdAt: '2026-11-30T06:00:00.5Z' }),
      makeTask({ id: 'earlier', createdAt: '2026-11-30T08:00:00.25+02:00' }),
    ]);
    expect(g[Group.Waiting].map((t) => t.id)).toEqual(['earlier', 'later']);
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
