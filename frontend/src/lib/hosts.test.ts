import { describe, expect, it, vi } from 'vitest';
import { HostStatus, type Host } from './backend/contract';
import { HostsBook, awayLine, hostAgents, whereOf } from './hosts.svelte';
import type { Backend } from './backend/backend';

function host(over: Partial<Host> & Pick<Host, 'id'>): Host {
  return {
    name: over.id,
    target: over.id,
    status: HostStatus.HostReady,
    providers: [],
    models: [],
    limits: { background: 3, helper: 4 },
    createdAt: '2026-12-02T10:00:00Z',
    updatedAt: '2026-12-02T10:00:00Z',
    rev: 1,
    ...over,
  };
}

describe('whereOf', () => {
  const name = (id: string) => (id === 'devbox' ? 'Dev box' : id);
  const short = (p: string) => p.replace('/home/me', '~');
  it('names the host before a folder there, as written', () => {
    expect(whereOf({ host: 'devbox', cwd: '~/src/app' }, name, short)).toBe('Dev box:~/src/app');
    expect(whereOf({ host: 'devbox', cwd: '' }, name, short)).toBe('Dev box:~');
  });
  it('writes a folder here as every surface does', () => {
    expect(whereOf({ host: '', cwd: '/home/me/site' }, name, short)).toBe('~/site');
  });
});

describe('hostAgents', () => {
  it('names the CLIs a host has by their providers, leaving out what is not one', () => {
    const h = host({
      id: 'devbox',
      providers: [
        { id: 'codex', path: '/usr/local/bin/codex', version: '0.80.0' },
        { id: 'vim', path: '/usr/bin/vim', version: '9' },
        { id: 'claude', path: '/home/me/.local/bin/claude', version: '2.1.332' },
      ],
    });
    expect(hostAgents(h)).toEqual([
      { kind: 'codex', name: 'Codex' },
      { kind: 'claude-code', name: 'Claude Code' },
    ]);
    expect(hostAgents({ providers: null })).toEqual([]);
  });
});

describe('awayLine', () => {
  const time = () => '10:42';
  it('says since when, and that the work goes on there', () => {
    expect(awayLine(host({ id: 'devbox', status: HostStatus.HostUnreachable, since: '2026-12-02T10:42:00Z' }), time)).toBe(
      'devbox unreachable since 10:42 — it carries on there',
    );
  });
  it('says nothing of a host in reach, or one never lost', () => {
    expect(awayLine(host({ id: 'devbox' }), time)).toBe('');
    expect(awayLine(host({ id: 'devbox', status: HostStatus.HostUnreachable }), time)).toBe('');
    expect(awayLine(undefined, time)).toBe('');
  });
});

describe('HostsBook', () => {
  it('loads once more when asked during a load, and keeps the list when a load fails', async () => {
    let calls = 0;
    const listHosts = vi.fn(async () => {
      calls++;
      if (calls === 3) throw new Error('gone');
      return { hosts: [host({ id: `h${calls}` })], runner: '0.1.0' };
    });
    const b = new HostsBook({ listHosts } as unknown as Backend);
    const first = b.load();
    void b.load(); // during the first: one more after it
    await first;
    expect(listHosts).toHaveBeenCalledTimes(2);
    expect(b.list.map((h) => h.id)).toEqual(['h2']);
    await b.load();
    expect(b.list.map((h) => h.id)).toEqual(['h2']);
    expect(b.name('h2')).toBe('h2');
    expect(b.name('gone')).toBe('gone');
    expect(b.error).toBe('Error: gone');
    expect(b.loaded).toBe(true);
  });

  it('keeps an answer newer than the list, never an older one, and forgets a removed host', () => {
    const b = new HostsBook({} as Backend);
    b.put(host({ id: 'a', rev: 2, name: 'A' }));
    b.put(host({ id: 'a', rev: 1, name: 'stale' }));
    b.put(host({ id: 'b' }));
    expect(b.list.map((h) => `${h.id}:${h.name}`)).toEqual(['a:A', 'b:b']);
    b.drop('a');
    expect(b.list.map((h) => h.id)).toEqual(['b']);
  });
});
