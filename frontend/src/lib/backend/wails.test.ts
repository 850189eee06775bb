import { describe, expect, it, vi } from 'vitest';
import { pickBackend } from './index';
import { HttpBackend } from './http';
import { WailsBackend, wailsEventName, type AppBindings, type WailsRuntime } from './wails';
import type { Approval, ConversationList, Found, ProviderList } from './contract';

function bindings(over: Partial<AppBindings> = {}): AppBindings {
  const no = () => Promise.reject(new Error('not in this test'));
  return {
    ListTasks: no,
    CreateTask: no,
    GetTask: no,
    ReadOutput: no,
    StopTask: no,
    RetryTask: no,
    ResumeTask: no,
    OpenFolder: no,
    OpenTask: no,
    SaveBackup: no,
    TakeOpen: no,
    DeleteTask: no,
    AnswerTask: no,
    RemoveWorktree: no,
    FetchTask: no,
    Approvals: no,
    Doctor: no,
    About: no,
    Search: no,
    Activity: no,
    PushKey: no,
    SubscribePush: no,
    UnsubscribePush: no,
    ListRoutines: no,
    CreateRoutine: no,
    GetRoutine: no,
    PatchRoutine: no,
    DeleteRoutine: no,
    RunRoutine: no,
    ListHosts: no,
    GetHost: no,
    PutHost: no,
    DeleteHost: no,
    TestHost: no,
    AcceptHostKey: no,
    Preferences: no,
    SetPreferences: no,
    ListConversations: no,
    CreateConversation: no,
    GetConversation: no,
    PatchConversation: no,
    SendMessage: no,
    StopConversation: no,
    AnswerAsk: no,
    ListProviders: no,
    FindProviders: no,
    GetProvider: no,
    PutProvider: no,
    DeleteProvider: no,
    ...over,
  };
}

describe('WailsBackend', () => {
  it('is picked when the window has bindings, else HTTP', () => {
    expect(pickBackend({ go: { service: { Service: bindings() } } } as unknown as Window)).toBeInstanceOf(WailsBackend);
    const page = { location: { hash: '', pathname: '/', search: '' }, history: { replaceState: () => {} }, sessionStorage: { getItem: () => null, setItem: () => {} } };
    expect(pickBackend(page as unknown as Window)).toBeInstanceOf(HttpBackend);
  });

  it('removes a worktree through RemoveWorktree, its 409 as a conflict', async () => {
    const remove = vi.fn((id: string, confirm: boolean) =>
      confirm ? Promise.resolve({ id } as never) : Promise.reject('{"error":{"code":"conflict","message":"Its worktree holds work (1 commit)."}}'),
    );
    const b = new WailsBackend(bindings({ RemoveWorktree: remove }), undefined);
    await expect(b.removeWorktree('t1', false)).rejects.toMatchObject({ code: 'conflict', message: 'Its worktree holds work (1 commit).' });
    expect(await b.removeWorktree('t1', true)).toEqual({ id: 't1' });
    expect(remove).toHaveBeenLastCalledWith('t1', true);
  });

  it('reads the JSON error a binding rejects with', async () => {
    const b = new WailsBackend(bindings({ StopTask: () => Promise.reject('{"error":{"code":"invalid_transition","message":"Task is done."}}') }), undefined);
    await expect(b.stopTask('x')).rejects.toMatchObject({ code: 'invalid_transition', message: 'Task is done.' });
  });

  it('calls the approvals, doctor, about and preferences bindings', async () => {
    const prefs = { limits: { background: 2, helper: 4 }, notifications: { tasks: false, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 };
    const set = vi.fn(async (p: typeof prefs) => p);
    const b = new WailsBackend(
      bindings({
        Approvals: async () => null as unknown as Approval[], // a server that predates the contract
        Doctor: async () => ({ ok: false, checks: [] }),
        About: async () => ({ userHome: 'C:\\Users\\ann', version: '0.1.0' }),
        Preferences: async () => prefs,
        SetPreferences: set,
      }),
      undefined,
    );
    expect(await b.approvals()).toEqual([]);
    expect(await b.doctor()).toEqual({ ok: false, checks: [] });
    expect(await b.about()).toEqual({ userHome: 'C:\\Users\\ann', version: '0.1.0' });
    expect(await b.preferences()).toEqual(prefs);
    expect(await b.setPreferences(prefs)).toEqual(prefs);
    expect(set).toHaveBeenCalledWith(prefs);
    const refusing = new WailsBackend(bindings({ SetPreferences: () => Promise.reject('{"error":{"code":"invalid","message":"limits.background must be between 1 and 64, got 0"}}') }), undefined);
    await expect(refusing.setPreferences(prefs)).rejects.toMatchObject({ code: 'invalid' });
  });

  it('passes events on and reloads when the bridge says so', async () => {
    let handler: (...data: unknown[]) => void = () => {};
    const off = vi.fn();
    const runtime: WailsRuntime = {
      EventsOn: (name, cb) => {
        expect(name).toBe(wailsEventName);
        handler = cb;
        return off;
      },
    };
    const events: unknown[] = [];
    let reloads = 0;
    const stop = new WailsBackend(bindings(), runtime).subscribe(
      (e) => events.push(e),
      () => reloads++,
    );
    await Promise.resolve();
    expect(reloads).toBe(1); // the first load lines up as over HTTP
    handler({ type: 'task.deleted', id: 'a' });
    handler({ type: 'reload' });
    handler({ type: 'conversation.changed' });
    handler({ type: 'app.compose' });
    expect(events).toEqual([{ type: 'task.deleted', id: 'a' }, { type: 'app.compose' }]);
    expect(reloads).toBe(2);
    stop();
    expect(off).toHaveBeenCalled();
  });

  it('calls the chat bindings and reads null lists as empty', async () => {
    const get = vi.fn(async () => ({ conversation: { id: 'c' }, messages: null, more: false }));
    const answer = vi.fn(async () => ({ id: 'c' }));
    const b = new WailsBackend(
      bindings({
        ListConversations: async () => ({ conversations: null }) as unknown as ConversationList,
        GetConversation: get as unknown as AppBindings['GetConversation'],
        AnswerAsk: answer as unknown as AppBindings['AnswerAsk'],
      }),
      undefined,
    );
    expect(await b.listConversations()).toEqual({ conversations: [], next: '' });
    expect((await b.getConversation('c')).messages).toEqual([]);
    expect(get).toHaveBeenCalledWith('c', 0, 0);
    await b.answerAsk('c', 'a', false);
    expect(answer).toHaveBeenCalledWith('c', 'a', false);
    const del = vi.fn(async () => null);
    const withProviders = new WailsBackend(
      bindings({ ListProviders: async () => ({ providers: null }) as unknown as ProviderList, DeleteProvider: del as unknown as AppBindings['DeleteProvider'], PutProvider: () => Promise.reject('{"error":{"code":"invalid","message":"baseUrl must be http or https"}}') }),
      undefined,
    );
    expect(await withProviders.listProviders()).toEqual([]);
    await withProviders.deleteProvider('x');
    expect(del).toHaveBeenCalledWith('x');
    await expect(withProviders.putProvider('x', { kind: 'openai' })).rejects.toMatchObject({ code: 'invalid' });
    const finding = new WailsBackend(bindings({ FindProviders: async () => ({ ollama: { running: true, address: '127.0.0.1:11434', models: null }, clis: null, keys: null }) as unknown as Found }), undefined);
    expect(await finding.findProviders()).toEqual({ ollama: { running: true, address: '127.0.0.1:11434', models: [] }, clis: [], keys: [] });
  });

  it('passes chat events on', async () => {
    let handler: (...data: unknown[]) => void = () => {};
    const events: unknown[] = [];
    new WailsBackend(bindings(), { EventsOn: (_n, cb) => ((handler = cb), () => {}) }).subscribe(
      (e) => events.push(e),
      () => {},
    );
    handler({ type: 'message.delta', delta: { conversationId: 'c', messageId: 'm', text: 'x' } });
    expect(events).toEqual([{ type: 'message.delta', delta: { conversationId: 'c', messageId: 'm', text: 'x' } }]);
  });
});
