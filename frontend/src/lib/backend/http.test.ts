import { describe, expect, it, vi } from 'vitest';
import { HttpBackend, backoff, backoffDelay, eventsURL } from './http';
import { takeToken, tokenKey } from './signin';
import { parseEvent } from './event';
import { leadingPartial, trailingPartial } from './utf8';

const enc = (s: string) => new TextEncoder().encode(s);

describe('utf8 ranges', () => {
  it('finds a cut character at the end', () => {
    const b = enc('ab€'); // € is 3 bytes
    expect(trailingPartial(b)).toBe(0);
    expect(trailingPartial(b.subarray(0, 4))).toBe(2);
    expect(trailingPartial(b.subarray(0, 3))).toBe(1);
    expect(trailingPartial(enc('plain'))).toBe(0);
    expect(trailingPartial(enc('😀'))).toBe(0);
    expect(trailingPartial(enc('😀').subarray(0, 3))).toBe(3);
  });

  it('skips a cut character at the start', () => {
    const b = enc('€x');
    expect(leadingPartial(b)).toBe(0);
    expect(leadingPartial(b.subarray(1))).toBe(2);
    expect(leadingPartial(b.subarray(2))).toBe(1);
  });
});

describe('event stream', () => {
  it('builds the URL from the page', () => {
    expect(eventsURL({ protocol: 'http:', host: '127.0.0.1:4000' })).toBe('ws://127.0.0.1:4000/api/events');
    expect(eventsURL({ protocol: 'https:', host: 'localhost:1' })).toBe('wss://localhost:1/api/events');
  });

  it('backs off, doubling to a ceiling', () => {
    const full = () => 1;
    expect(backoffDelay(0, full)).toBe(500);
    expect(backoffDelay(1, full)).toBe(1000);
    expect(backoffDelay(10, full)).toBe(10_000);
    expect(backoffDelay(0, () => 0)).toBe(250);
  });

  it('parses events and drops unknown ones', () => {
    expect(parseEvent('{"type":"task.deleted","id":"x"}')).toEqual({ type: 'task.deleted', id: 'x' });
    expect(parseEvent('{"type":"task.changed","task":{"id":"x","rev":2}}')).toMatchObject({ type: 'task.changed' });
    expect(parseEvent('{"type":"host.changed","id":"devbox"}')).toEqual({ type: 'host.changed', id: 'devbox' });
    expect(parseEvent('{"type":"providers.changed","id":"scripted"}')).toEqual({ type: 'providers.changed', id: 'scripted' });
    expect(parseEvent('{"type":"task.output","id":"x","outputBytes":12}')).toEqual({ type: 'task.output', id: 'x', outputBytes: 12 });
    expect(parseEvent('{"type":"task.output","id":"x"}')).toBeNull();
    expect(parseEvent('{"type":"task.changed","task":{"id":"x"}}')).toBeNull();
    expect(parseEvent('{"type":"app.open","id":"x"}')).toEqual({ type: 'app.open', id: 'x' });
    expect(parseEvent('{"type":"app.open-chat","id":"c"}')).toEqual({ type: 'app.open-chat', id: 'c' });
    expect(parseEvent('{"type":"app.compose"}')).toEqual({ type: 'app.compose' });
    expect(parseEvent('{"type":"conversation.changed"}')).toBeNull();
    expect(parseEvent('nope')).toBeNull();
  });
});

describe('HttpBackend.subscribe', () => {
  /** A WebSocket double the test opens, fails and feeds by hand. */
  class FakeSocket {
    static all: FakeSocket[] = [];
    onopen: (() => void) | null = null;
    onclose: (() => void) | null = null;
    onmessage: ((m: { data: string }) => void) | null = null;
    constructor(readonly url: string) {
      FakeSocket.all.push(this);
    }
    close(): void {
      this.onclose?.();
    }
  }

  it('opens with a fresh ticket each time, reloads on open and after repeated failures, and passes events on', async () => {
    vi.useFakeTimers();
    FakeSocket.all = [];
    const listeners = { addEventListener: () => {}, removeEventListener: () => {} };
    vi.stubGlobal('window', { location: { protocol: 'http:', host: '127.0.0.1:9' }, ...listeners });
    vi.stubGlobal('document', listeners);
    vi.stubGlobal('WebSocket', FakeSocket);
    let n = 0;
    const fetchMock = vi.fn(async () => new Response(JSON.stringify({ ticket: `t${++n}` }), { status: 200 }));
    vi.stubGlobal('fetch', fetchMock);
    try {
      const events: unknown[] = [];
      let reloads = 0;
      const off = new HttpBackend('', 'secret').subscribe(
        (e) => events.push(e),
        () => reloads++,
      );
      await vi.advanceTimersByTimeAsync(0);
      const first = FakeSocket.all[0];
      expect(first?.url).toBe('ws://127.0.0.1:9/api/events?ticket=t1');
      expect(fetchMock).toHaveBeenCalledWith('/api/events/ticket', expect.objectContaining({ method: 'POST', headers: expect.objectContaining({ Authorization: 'Bearer secret' }) }));
      first?.onopen?.();
      expect(reloads).toBe(1);
      first?.onmessage?.({ data: '{"type":"task.deleted","id":"a"}' });
      expect(events).toEqual([{ type: 'task.deleted', id: 'a' }]);

      first?.onclose?.(); // the server went away
      await vi.advanceTimersByTimeAsync(backoff.maxMs);
      FakeSocket.all[1]?.onclose?.(); // refused: reload to learn why
      expect(reloads).toBe(2);
      await vi.advanceTimersByTimeAsync(backoff.maxMs);
      FakeSocket.all[2]?.onopen?.();
      expect(reloads).toBe(3);
      expect(FakeSocket.all.map((s) => s.url.split('=')[1])).toEqual(['t1', 't2', 't3']);

      // A ticket refused twice (signed out): the caller reloads to learn why.
      fetchMock.mockImplementation(async () => new Response('{"error":{"code":"unauthorized","message":"Sign in."}}', { status: 401 }));
      FakeSocket.all[2]?.onclose?.();
      await vi.advanceTimersByTimeAsync(backoff.maxMs * 3);
      expect(reloads).toBeGreaterThanOrEqual(4);
      expect(FakeSocket.all).toHaveLength(3);

      off();
      await vi.advanceTimersByTimeAsync(backoff.maxMs * 2);
      expect(FakeSocket.all).toHaveLength(3);
    } finally {
      vi.unstubAllGlobals();
      vi.useRealTimers();
    }
  });
});

describe('HttpBackend.readOutput', () => {
  it('returns whole characters and reads a cut one again next time', async () => {
    const bytes = new TextEncoder().encode('ok €'); // 6 bytes; cut inside €
    const cut = bytes.subarray(0, 5);
    const fetchMock = vi.fn(async () => new Response(cut, { status: 200, headers: { 'X-Next-Offset': '5' } }));
    vi.stubGlobal('fetch', fetchMock);
    try {
      const chunk = await new HttpBackend('', 'secret').readOutput('t 1', 0);
      expect(chunk).toEqual({ data: 'ok ', next: 3 });
      // The token goes as a header, never as a cookie.
      expect(fetchMock).toHaveBeenCalledWith(
        '/api/tasks/t%201/output?offset=0&max=65536',
        expect.objectContaining({ credentials: 'omit', headers: expect.objectContaining({ Authorization: 'Bearer secret' }) }),
      );
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('turns an error answer into an ApiError', async () => {
    vi.stubGlobal('fetch', async () => new Response('{"error":{"code":"not_found","message":"No task x."}}', { status: 404 }));
    try {
      await expect(new HttpBackend().getTask('x')).rejects.toMatchObject({ code: 'not_found', status: 404, message: 'No task x.' });
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('says when Conch cannot be reached', async () => {
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('Failed to fetch');
    });
    try {
      await expect(new HttpBackend().listTasks()).rejects.toMatchObject({ code: 'network' });
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('HttpBackend approvals, doctor, about and preferences', () => {
  const prefs = { limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: false }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: 'codex', retentionDays: 90 };

  it('reads the approvals, the doctor, the home folder and the preferences', async () => {
    const answers: Record<string, unknown> = {
      '/api/approvals': { approvals: [{ kind: 'task', taskId: 'a', conversationId: '', title: 't', cwd: '/p', ask: { id: 'k' } }] },
      '/api/doctor': { ok: true, checks: [{ id: 'tasks', level: 'ok' }] },
      '/api/about': { userHome: '/home/me', version: '0.1.0' },
      '/api/preferences': prefs,
    };
    const fetchMock = vi.fn(async (path: string) => new Response(JSON.stringify(answers[path]), { status: 200 }));
    vi.stubGlobal('fetch', fetchMock);
    try {
      const b = new HttpBackend();
      expect(await b.approvals()).toEqual([{ kind: 'task', taskId: 'a', conversationId: '', title: 't', cwd: '/p', ask: { id: 'k' } }]);
      expect((await b.doctor()).checks[0]?.id).toBe('tasks');
      expect(await b.about()).toEqual({ userHome: '/home/me', version: '0.1.0' });
      expect(await b.preferences()).toEqual(prefs);
      for (const path of Object.keys(answers)) expect(fetchMock).toHaveBeenCalledWith(path, expect.objectContaining({ method: 'GET' }));
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('reads a null approvals list as empty', async () => {
    vi.stubGlobal('fetch', async () => new Response('{"approvals":null}', { status: 200 }));
    try {
      expect(await new HttpBackend().approvals()).toEqual([]);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('saves preferences with PATCH and reports a refused value', async () => {
    const fetchMock = vi.fn(async (_path: string, init?: RequestInit) => new Response(init?.body as string, { status: 200 }));
    vi.stubGlobal('fetch', fetchMock);
    try {
      expect(await new HttpBackend().setPreferences(prefs)).toEqual(prefs);
      const [path, init] = fetchMock.mock.calls[0] ?? [];
      expect(path).toBe('/api/preferences');
      expect(init).toMatchObject({ method: 'PATCH', body: JSON.stringify(prefs), headers: expect.objectContaining({ 'Content-Type': 'application/json' }) });
      fetchMock.mockResolvedValueOnce(new Response('{"error":{"code":"invalid","message":"limits.helper must be between 1 and 64, got 0"}}', { status: 400 }));
      await expect(new HttpBackend().setPreferences(prefs)).rejects.toMatchObject({ code: 'invalid', status: 400 });
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('HttpBackend removeWorktree', () => {
  it('posts {confirm} to remove-worktree and reads a 409 as a conflict with its message', async () => {
    const fetchMock = vi.fn(async (_path: string, init?: RequestInit) =>
      JSON.parse(init?.body as string).confirm
        ? new Response('{"id":"t 1","worktree":{"kept":false}}', { status: 200 })
        : new Response('{"error":{"code":"conflict","message":"Its worktree holds work (1 commit); confirm to remove it."}}', { status: 409 }),
    );
    vi.stubGlobal('fetch', fetchMock);
    try {
      const b = new HttpBackend();
      await expect(b.removeWorktree('t 1', false)).rejects.toMatchObject({ code: 'conflict', status: 409, message: 'Its worktree holds work (1 commit); confirm to remove it.' });
      expect(await b.removeWorktree('t 1', true)).toMatchObject({ id: 't 1', worktree: { kept: false } });
      expect(fetchMock).toHaveBeenCalledWith('/api/tasks/t%201/remove-worktree', expect.objectContaining({ method: 'POST', body: '{"confirm":false}' }));
      expect(fetchMock).toHaveBeenLastCalledWith('/api/tasks/t%201/remove-worktree', expect.objectContaining({ method: 'POST', body: '{"confirm":true}' }));
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('HttpBackend conversations and providers', () => {
  it('calls each route with the documented method and body', async () => {
    const calls: [string, string, string | undefined][] = [];
    const fetchMock = vi.fn(async (path: string, init?: RequestInit) => {
      calls.push([init?.method ?? 'GET', path, init?.body as string | undefined]);
      if (path === '/api/conversations' && init?.method === 'GET') return new Response('{"conversations":null}', { status: 200 });
      if (path === '/api/providers') return new Response('{"providers":[{"id":"ollama","ready":true}]}', { status: 200 });
      if (path === '/api/found') return new Response('{"ollama":{"running":true,"address":"127.0.0.1:11434","models":null},"clis":null,"keys":[{"variable":"OPENAI_API_KEY","provider":"openai","name":"OpenAI"}]}', { status: 200 });
      if (init?.method === 'DELETE') return new Response(null, { status: 204 });
      if (path.startsWith('/api/conversations/c%201?') || path === '/api/conversations/c%201') return new Response('{"conversation":{"id":"c 1"},"messages":null,"more":false}', { status: 200 });
      return new Response('{"id":"x"}', { status: 200 });
    });
    vi.stubGlobal('fetch', fetchMock);
    try {
      const b = new HttpBackend();
      expect(await b.listConversations()).toEqual({ conversations: [], next: '' });
      await b.listConversations({ q: 'plan b', cursor: 'Yw', limit: 20 });
      expect(calls.at(-1)?.[1]).toBe('/api/conversations?q=plan+b&cursor=Yw&limit=20');
      await b.createConversation({ mode: 'ask', cwd: '/p' });
      expect((await b.getConversation('c 1')).messages).toEqual([]);
      await b.getConversation('c 1', 40, 20);
      await b.patchConversation('c 1', { tainted: false });
      await b.sendMessage('c 1', 'hi');
      await b.stopConversation('c 1');
      await b.answerAsk('c 1', 'a/1', true);
      expect(await b.listProviders()).toEqual([{ id: 'ollama', ready: true }]);
      expect(await b.findProviders()).toEqual({ ollama: { running: true, address: '127.0.0.1:11434', models: [] }, clis: [], keys: [{ variable: 'OPENAI_API_KEY', provider: 'openai', name: 'OpenAI' }] });
      await b.putProvider('mine', { kind: 'openai', baseUrl: 'http://x/v1', apiKey: 'k' });
      await b.deleteProvider('mine');
      expect(calls).toEqual([
        ['GET', '/api/conversations', undefined],
        ['GET', '/api/conversations?q=plan+b&cursor=Yw&limit=20', undefined],
        ['POST', '/api/conversations', '{"mode":"ask","cwd":"/p"}'],
        ['GET', '/api/conversations/c%201', undefined],
        ['GET', '/api/conversations/c%201?before=40&limit=20', undefined],
        ['PATCH', '/api/conversations/c%201', '{"tainted":false}'],
        ['POST', '/api/conversations/c%201/messages', '{"text":"hi"}'],
        ['POST', '/api/conversations/c%201/stop', undefined],
        ['POST', '/api/conversations/c%201/asks/a%2F1', '{"allow":true}'],
        ['GET', '/api/providers', undefined],
        ['GET', '/api/found', undefined],
        ['PUT', '/api/providers/mine', '{"kind":"openai","baseUrl":"http://x/v1","apiKey":"k"}'],
        ['DELETE', '/api/providers/mine', undefined],
      ]);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('parses the three chat events', () => {
    expect(parseEvent('{"type":"conversation.changed","conversation":{"id":"c","rev":3}}')).toMatchObject({ type: 'conversation.changed', conversation: { id: 'c', rev: 3 } });
    expect(parseEvent('{"type":"message.added","message":{"id":"m","conversationId":"c","seq":1,"kind":"user"}}')).toMatchObject({ type: 'message.added' });
    expect(parseEvent('{"type":"message.delta","delta":{"conversationId":"c","messageId":"m","text":"hi"}}')).toEqual({
      type: 'message.delta',
      delta: { conversationId: 'c', messageId: 'm', text: 'hi' },
    });
    expect(parseEvent('{"type":"message.delta","delta":{"conversationId":"c"}}')).toBeNull();
    expect(parseEvent('{"type":"message.added","message":{"id":"m"}}')).toBeNull();
  });
});

describe('takeToken', () => {
  const page = (hash: string, stored: string | null = null) => {
    const store = new Map<string, string>();
    if (stored !== null) store.set(tokenKey, stored);
    const replaced: string[] = [];
    return {
      store,
      replaced,
      page: {
        location: { hash, pathname: '/tasks', search: '?x=1' },
        history: { replaceState: (_s: unknown, _t: string, url?: string | URL | null) => void replaced.push(String(url)) },
        sessionStorage: { getItem: (k: string) => store.get(k) ?? null, setItem: (k: string, v: string) => void store.set(k, v) },
      },
    };
  };

  it('keeps the token from the link and takes it out of the address bar', () => {
    const p = page('#token=abc123');
    expect(takeToken(p.page)).toBe('abc123');
    expect(p.store.get(tokenKey)).toBe('abc123');
    expect(p.replaced).toEqual(['/tasks?x=1']);
  });

  it('signs in after a reload from session storage', () => {
    const p = page('', 'kept');
    expect(takeToken(p.page)).toBe('kept');
    expect(p.replaced).toEqual([]);
  });

  it('has no token without a link or a stored one, and ignores another fragment', () => {
    expect(takeToken(page('').page)).toBeNull();
    expect(takeToken(page('#tasks').page)).toBeNull();
  });
});
