import { describe, expect, it, vi } from 'vitest';
import { EventType, NoticeKind, Status, type Task } from './backend/contract';
import { makeConversation, makeTask, mockBackend } from './backend/fixture';
import { listen, route } from './events';
import { ComposeTarget, Nav, Page } from './nav.svelte';
import { TasksStore } from './tasks/store.svelte';

const now = (f: () => void) => f();

/** The real tasks store and navigation; the chats and the home folder as doubles. */
function hearers(s: TasksStore) {
  return {
    tasks: s,
    chats: { apply: vi.fn(), reload: vi.fn(async () => {}), loadProviders: vi.fn(async () => {}) },
    nav: new Nav((id) => s.pin(id)),
    home: { load: vi.fn(async () => {}) },
    hosts: { load: vi.fn(async () => {}) },
    notices: { tell: vi.fn() },
  };
}

/** A finished task that ended min minutes after 06:00. */
const ended = (id: string, min: number, over: Partial<Task> = {}) =>
  makeTask({ id, status: Status.Done, endedAt: new Date(Date.UTC(2026, 10, 30, 6, min)).toISOString(), ...over });

describe('the event stream', () => {
  it('reloads on reconnect and drops what was deleted meanwhile', async () => {
    const b = mockBackend([makeTask({ id: 'a' }), makeTask({ id: 'b' })]);
    const s = new TasksStore(b, now);
    listen(b, hearers(s));
    await vi.waitFor(() => expect(s.byId.size).toBe(2));
    b.list = [makeTask({ id: 'b', rev: 5, status: Status.Running })];
    b.reconnect();
    await vi.waitFor(() => expect(s.byId.size).toBe(1));
    expect(s.byId.get('b')?.status).toBe(Status.Running);
    expect(s.badge).toEqual({ count: 1, needsYou: false, label: '1 working' });
  });

  it('hands a notice Conch raised to the page\'s notifications, not to the tasks', () => {
    const s = new TasksStore(mockBackend(), now);
    const to = hearers(s);
    const e = { type: EventType.TaskNotice, task: makeTask({ id: 'n' }), notice: { kind: NoticeKind.NoticeFinished, tag: 'task-n', title: 'T — done', body: '' } } as const;
    route(e, to);
    expect(to.notices.tell).toHaveBeenCalledWith(e);
    expect(s.byId.has('n')).toBe(false);
  });

  it('hands a task\'s grown log to its shown output, not to the records', async () => {
    const b = mockBackend([makeTask({ id: 'r', status: Status.Running, outputBytes: 0 })]);
    b.readOutput = vi.fn(async () => ({ data: 'hello', next: 5 }));
    const s = new TasksStore(b, now);
    await s.reload();
    const tail = s.tail('r');
    tail.sync(0);
    route({ type: EventType.TaskOutput, id: 'r', outputBytes: 5 }, hearers(s));
    await vi.waitFor(() => expect(tail.text).toBe('hello'));
    expect(s.byId.get('r')?.outputBytes).toBe(0);
  });

  it('reads the hosts again when one changed, and not the tasks', () => {
    const s = new TasksStore(mockBackend(), now);
    const to = hearers(s);
    route({ type: EventType.HostChanged, id: 'devbox' }, to);
    expect(to.hosts.load).toHaveBeenCalledTimes(1);
    expect(s.byId.size).toBe(0);
  });

  it('reads the providers again when one was connected, changed or removed elsewhere', () => {
    const s = new TasksStore(mockBackend(), now);
    const to = hearers(s);
    route({ type: EventType.ProvidersChanged, id: 'scripted' }, to);
    expect(to.chats.loadProviders).toHaveBeenCalledTimes(1);
    expect(to.hosts.load).not.toHaveBeenCalled();
    expect(s.byId.size).toBe(0);
  });

  it('asks the page to reveal a task when a notification is clicked', () => {
    const s = new TasksStore(mockBackend(), now);
    const to = hearers(s);
    route({ type: EventType.Open, id: 'a' }, to);
    expect(to.nav.reveal).toEqual({ id: 'a', seq: 1 });
    route({ type: EventType.Open, id: 'a' }, to);
    expect(to.nav.reveal).toEqual({ id: 'a', seq: 2 });
    expect(s.byId.size).toBe(0);
  });

  it('opens a chat picked in the tray', () => {
    const s = new TasksStore(mockBackend(), now);
    const to = hearers(s);
    route({ type: EventType.OpenChat, id: 'c1' }, to);
    expect(to.nav.page).toBe(Page.Chat);
    expect(to.nav.chat).toBe('c1');
    expect(s.byId.size).toBe(0);
  });

  it('asks for the composer on app.compose and reveals on showTask()', () => {
    const s = new TasksStore(mockBackend(), now);
    const to = hearers(s);
    route({ type: EventType.Compose }, to);
    to.nav.requestCompose();
    expect(to.nav.compose).toBe(2);
    expect(to.nav.composeTo).toBe(ComposeTarget.Tasks);
    to.nav.showTask('x');
    expect(to.nav.reveal).toEqual({ id: 'x', seq: 1 });
  });

  it('shows the task a notification asked for before the page listened (a click that started Conch)', async () => {
    const t = makeTask({ id: 'clicked', status: Status.Done, conversationId: 'own', parentConversationId: 'chat-1' });
    const b = mockBackend([t]);
    b.takeOpen.mockResolvedValueOnce('clicked');
    const s = new TasksStore(b, now);
    const to = hearers(s);
    listen(b, to);
    await vi.waitFor(() => expect(to.nav.reveal?.id).toBe('clicked'));
    expect(s.loaded).toBe(true);
    expect(b.takeOpen).toHaveBeenCalledTimes(1);
    b.reconnect(); // a reconnect asks nothing again: the request was taken
    await vi.waitFor(() => expect(b.listTasks).toHaveBeenCalledTimes(2));
    expect(b.takeOpen).toHaveBeenCalledTimes(1);
  });

  it('brings back as many pages as were loaded on a reload, so the person stays where they were', async () => {
    const b = mockBackend([ended('f1', 10)]);
    b.next = 'p2';
    b.pages.p2 = () => ({ tasks: [ended('e1', 5)], next: 'p3' });
    b.pages.p3 = () => ({ tasks: [ended('d1', 2)], next: '' });
    const s = new TasksStore(b, now);
    listen(b, hearers(s));
    await vi.waitFor(() => expect(s.loaded).toBe(true));
    await s.loadMore();
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1', 'e1']);
    b.listTasks.mockClear();
    b.reconnect();
    await vi.waitFor(() => expect(b.listTasks).toHaveBeenCalledTimes(2));
    await vi.waitFor(() => expect(s.finished.next).toBe('p3'));
    expect(b.listTasks).toHaveBeenLastCalledWith({ group: 'finished', cursor: 'p2' });
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1', 'e1']);
    // Once every page was loaded, a reload loads them all again.
    await s.loadMore();
    expect(s.finished.more).toBe(false);
    b.listTasks.mockClear();
    await s.reload();
    expect(b.listTasks).toHaveBeenCalledTimes(3);
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1', 'e1', 'd1']);
    expect(s.finished.more).toBe(false);
  });

  it('sends chat events to the chats and task events to the tasks, and reloads all three on a reconnect', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Running })]);
    const s = new TasksStore(b, now);
    const to = hearers(s);
    listen(b, to);
    await vi.waitFor(() => expect(s.loaded).toBe(true));
    b.emit({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Done, rev: 2 }), prev: Status.Running });
    expect(s.byId.get('a')?.status).toBe(Status.Done);
    const c = makeConversation();
    b.emit({ type: EventType.ConversationChanged, conversation: c });
    expect(to.chats.apply).toHaveBeenCalledWith({ type: EventType.ConversationChanged, conversation: c });
    b.reconnect();
    expect(to.chats.reload).toHaveBeenCalledTimes(1);
    expect(to.home.load).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(b.listTasks).toHaveBeenCalledTimes(2));
  });

  it('keeps a task listed that a notification shows, applying the frame’s events before it', async () => {
    const b = mockBackend([ended('f1', 10)]);
    b.next = 'p2';
    const s = new TasksStore(b, () => {}); // a frame that never comes
    await s.reload();
    const to = hearers(s);
    route({ type: EventType.TaskChanged, task: ended('old', 1) }, to);
    expect(s.byId.has('old')).toBe(false);
    route({ type: EventType.Open, id: 'old' }, to);
    expect(s.pinned.has('old')).toBe(true);
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1', 'old']);
    expect(to.nav.reveal).toEqual({ id: 'old', seq: 1 });
  });
});
