import { describe, expect, it, vi } from 'vitest';
import { EventType, Status, type Task, type TaskQuery } from '../backend/contract';
import { ApiError } from '../backend/error';
import { concurrent, makeTask, mockBackend } from '../backend/fixture';
import { Group } from './language';
import { Pending, TasksStore, alreadyAnswered } from './store.svelte';

const now = (f: () => void) => f();

describe('TasksStore', () => {
  it('loads, then applies events by rev', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Running, rev: 2 })]);
    const s = new TasksStore(b, now);
    await s.reload();
    expect(s.loaded).toBe(true);
    expect(s.groups[Group.Working].map((t) => t.id)).toEqual(['a']);
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Done, rev: 3 }), prev: Status.Running });
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Running, rev: 2 }), prev: Status.Queued });
    expect(s.byId.get('a')?.status).toBe(Status.Done);
    expect(s.counts).toEqual({ running: 0, done: 1 });
    expect(s.badge).toBeNull();
  });

  it('coalesces events until the frame runs', () => {
    const frames: (() => void)[] = [];
    const s = new TasksStore(mockBackend(), (f) => frames.push(f));
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', rev: 1 }) });
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'b', rev: 1 }) });
    expect(frames).toHaveLength(1);
    expect(s.byId.size).toBe(0);
    frames[0]?.();
    expect(s.byId.size).toBe(2);
  });

  it('marks an action pending and takes the server answer', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Running, rev: 2 })]);
    const s = new TasksStore(b, now);
    await s.reload();
    const p = s.stop('a');
    expect(s.pending.get('a')).toBe(Pending.Stop);
    await p;
    expect(s.pending.has('a')).toBe(false);
    expect(s.byId.get('a')?.status).toBe(Status.Stopped);
  });

  it('shows one sentence and refetches when an action fails', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Done, rev: 4 })]);
    b.stopTask.mockRejectedValueOnce(new ApiError('invalid_transition', 'task is done', 409));
    const s = new TasksStore(b, now);
    await s.reload();
    await s.stop('a');
    expect(s.errors.get('a')).toBe('Task is done.');
    expect(b.getTask).toHaveBeenCalledWith('a');
  });

  it('hides a task while it is being deleted and brings it back if that fails', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Done })]);
    let fail: (e: unknown) => void = () => {};
    b.deleteTask.mockImplementationOnce(() => new Promise((_, reject) => (fail = reject)));
    const s = new TasksStore(b, now);
    await s.reload();
    const p = s.remove('a');
    expect(s.finishedShown).toHaveLength(0);
    fail(new ApiError('conflict', 'it is running again', 409));
    await p;
    expect(s.finishedShown).toHaveLength(1);
    expect(s.errors.get('a')).toBe('It is running again.');
  });

  it('answers the current question', async () => {
    const ask = { id: 'k1', tool: 'bash', detail: 'Run echo?', askedAt: '2026-11-30T06:00:00Z', expiresAt: '2026-11-30T07:00:00Z' };
    const b = mockBackend([makeTask({ id: 'a', status: Status.NeedsYou, ask })]);
    const s = new TasksStore(b, now);
    await s.reload();
    expect(s.badge?.needsYou).toBe(true);
    await s.answer('a', true);
    expect(b.answerTask).toHaveBeenCalledWith('a', 'k1', true);
    expect(s.byId.get('a')?.status).toBe(Status.Running);
  });

  it('removes a kept worktree: a conflict asks, the confirmed call puts the task', async () => {
    const w = { path: '/w', branch: 'conch/h', base: 'main', kept: true, work: { changed: 0, untracked: 0, ahead: 1, behind: 0 } };
    const b = mockBackend([makeTask({ id: 'h', status: Status.Done, kind: 'helper', worktree: w, rev: 5 })]);
    b.removeWorktree.mockRejectedValueOnce(new ApiError('conflict', 'Its worktree holds work (1 commit); confirm to remove it and its branch conch/h.', 409));
    b.removeWorktree.mockResolvedValueOnce(makeTask({ id: 'h', status: Status.Done, kind: 'helper', worktree: { ...w, kept: false }, rev: 6 }));
    const s = new TasksStore(b, now);
    await s.reload();
    expect(await s.removeWorktree('h', false)).toEqual({ phase: 'confirm', message: 'Its worktree holds work (1 commit); confirm to remove it and its branch conch/h.' });
    expect(s.byId.get('h')?.worktree?.kept).toBe(true);
    expect(await s.removeWorktree('h', true)).toEqual({ phase: 'idle' });
    expect(b.removeWorktree).toHaveBeenLastCalledWith('h', true);
    expect(s.byId.get('h')?.worktree?.kept).toBe(false);
    b.removeWorktree.mockRejectedValueOnce(new ApiError('unauthorized', 'no token', 401));
    expect((await s.removeWorktree('h', false)).phase).toBe('error');
    expect(s.unauthorized).toBe(true);
  });

  it('counts busy background slots from the live list', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Running }), makeTask({ id: 'h', status: Status.Running, kind: 'helper' })]);
    const s = new TasksStore(b, now);
    await s.reload();
    expect(s.backgroundSlots).toEqual({ running: 1, limit: 3 });
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Done, rev: 2 }) });
    expect(s.backgroundSlots).toEqual({ running: 0, limit: 3 });
  });

  it('says calmly when a question was already answered elsewhere', async () => {
    const ask = { id: 'k1', tool: 'bash', detail: 'Run echo?', askedAt: '2026-11-30T06:00:00Z', expiresAt: '2026-11-30T07:00:00Z' };
    const b = mockBackend([makeTask({ id: 'a', status: Status.NeedsYou, ask })]);
    b.answerTask.mockRejectedValueOnce(new ApiError('conflict', 'the question was already answered', 409));
    const s = new TasksStore(b, now);
    await s.reload();
    b.list = [makeTask({ id: 'a', status: Status.Running, rev: 2 })];
    await s.answer('a', false);
    expect(s.errors.get('a')).toBe(alreadyAnswered);
    expect(s.byId.get('a')?.status).toBe(Status.Running);
  });

  it('tells listeners of live changes only, not of loads or answers', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Running })]);
    const s = new TasksStore(b, now);
    const seen: string[] = [];
    const off = s.onChange((before, after) => seen.push(`${before?.status ?? '-'}>${after.status}`));
    await s.reload();
    await s.stop('a');
    expect(seen).toEqual([]);
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Queued, rev: 11 }) });
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Queued, rev: 11 }) }); // not newer
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'b', status: Status.Running }) });
    expect(seen).toEqual(['stopped>queued', '->running']);
    off();
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'b', status: Status.Done, rev: 2 }) });
    expect(seen).toHaveLength(2);
  });

  it('remembers what this window sent, even when it finished before the answer came', async () => {
    const b = mockBackend();
    const s = new TasksStore(b, now);
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'new', status: Status.Done, rev: 3 }) });
    await s.create({ text: 'echo quick' });
    expect(s.byId.get('new')?.status).toBe(Status.Done);
    expect(s.sent.has('new')).toBe(true);
  });

  it('notices a sign-in is needed', async () => {
    const b = mockBackend();
    b.listTasks.mockRejectedValueOnce(new ApiError('unauthorized', 'no token', 401));
    const s = new TasksStore(b, now);
    await s.reload();
    expect(s.unauthorized).toBe(true);
  });
});

/** A finished task that ended min minutes after 06:00. */
const ended = (id: string, min: number, over: Partial<Task> = {}) =>
  makeTask({ id, status: Status.Done, endedAt: new Date(Date.UTC(2026, 10, 30, 6, min)).toISOString(), ...over });

describe('TasksStore pages', () => {
  it('keeps counts exact through events, for tasks it never loaded too', async () => {
    const b = mockBackend([makeTask({ id: 'a', status: Status.Running }), ended('f2', 2), ended('f1', 1)]);
    const s = new TasksStore(b, now);
    await s.reload();
    // The server counts far more than it sent.
    s.counts = { running: 1, done: 150, failed: 3 };
    expect(s.count).toBe(154);
    expect(s.finishedCount).toBe(153);
    // An old task, never loaded, is tried again: it leaves done for queued.
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'old', status: Status.Queued, rev: 7 }), prev: Status.Done });
    // Another one, never loaded, is deleted.
    s.enqueue({ type: EventType.TaskDeleted, id: 'older', prev: Status.Failed });
    // A new task, then a loaded one finishing, then a change that keeps its status.
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'n', status: Status.Queued }) });
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Failed, rev: 2 }), prev: Status.Running });
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'a', status: Status.Failed, rev: 3 }), prev: Status.Failed });
    expect(s.counts).toEqual({ running: 0, done: 149, failed: 3, queued: 2 });
    expect(s.count).toBe(154);
    expect(s.byId.has('older')).toBe(false);
  });

  it('loads finished pages as asked, without duplicates, while events move tasks between groups', async () => {
    const b = mockBackend([ended('f3', 30), ended('f2', 20), ended('f1', 10)]);
    b.next = 'p2';
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    b.pages.p2 = () => ({ tasks: [ended('f1', 10), ended('e2', 8), ended('e1', 6)], next: 'p3' });
    b.pages.p3 = () => ({ tasks: [ended('d1', 4)], next: '' });
    const s = new TasksStore(b, now);
    await s.reload();
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f3', 'f2', 'f1']);
    expect(s.finished.next).toBe('p2');
    // A change to a task further down waits for the pages to reach it.
    s.enqueue({ type: EventType.TaskChanged, task: ended('d1', 4, { rev: 5, title: 'renamed' }), prev: Status.Done });
    expect(s.finishedShown.map((t) => t.id)).not.toContain('d1');

    b.listTasks.mockImplementationOnce(async (q?: TaskQuery) => {
      await gate;
      const p = b.pages[q?.cursor ?? ''];
      if (!p) throw new Error(`no page ${q?.cursor}`);
      return { ...p(), counts: {}, concurrent };
    });
    const more = s.loadMore();
    void s.loadMore(); // asked twice while one is on its way: one request
    // While the page is on its way: f2 runs again, a new task finishes.
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'f2', status: Status.Queued, rev: 2 }), prev: Status.Done });
    s.enqueue({ type: EventType.TaskChanged, task: ended('new', 40), prev: Status.Running });
    release();
    await more;
    expect(b.listTasks).toHaveBeenLastCalledWith({ group: 'finished', cursor: 'p2' });
    expect(b.listTasks).toHaveBeenCalledTimes(2);
    expect(s.finishedShown.map((t) => t.id)).toEqual(['new', 'f3', 'f1', 'e2', 'e1']);
    expect(s.groups[Group.Waiting].map((t) => t.id)).toEqual(['f2']);

    await s.loadMore();
    expect(s.finishedShown.map((t) => t.id)).toEqual(['new', 'f3', 'f1', 'e2', 'e1', 'd1']);
    expect(s.byId.get('d1')?.title).toBe('renamed'); // the page's older copy lost to the event's
    expect(s.finished.more).toBe(false);
    await s.loadMore();
    expect(b.listTasks).toHaveBeenCalledTimes(3);
  });

  it('shows a task opened from below the pages after the ones they reached, and hides one being deleted', async () => {
    const b = mockBackend([ended('f3', 30), ended('f2', 20)]);
    b.next = 'p2';
    const s = new TasksStore(b, now);
    await s.reload();
    const shown = s.finishedShown;
    expect(shown.map((t) => t.id)).toEqual(['f3', 'f2']);
    // A change to another group leaves the finished list the same array.
    s.enqueue({ type: EventType.TaskChanged, task: makeTask({ id: 'q', status: Status.Queued }) });
    expect(s.finishedShown).toBe(shown);
    // Two old tasks come in (a chat showed them) but only one is opened.
    s.enqueue({ type: EventType.TaskChanged, task: ended('old2', 5) });
    s.enqueue({ type: EventType.TaskChanged, task: ended('old1', 3) });
    expect(s.finishedShown).toBe(shown);
    s.pin('old1');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f3', 'f2', 'old1']);
    s.pin('old2');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f3', 'f2', 'old2', 'old1']);
    // While its delete is on its way, a task shows nowhere.
    let done = () => {};
    b.deleteTask.mockImplementationOnce(() => new Promise<void>((r) => (done = r)));
    const gone = s.remove('f2');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f3', 'old2', 'old1']);
    expect(s.groups[Group.Finished].map((t) => t.id)).toEqual(['f3', 'old2', 'old1']);
    done();
    await gone;
  });

  it('says why a page could not be loaded and loads it on the next try', async () => {
    const b = mockBackend([ended('f1', 10)]);
    b.next = 'p2';
    b.pages.p2 = () => ({ tasks: [ended('e1', 5)], next: '' });
    const s = new TasksStore(b, now);
    await s.reload();
    b.listTasks.mockRejectedValueOnce(new ApiError('unavailable', 'the store is busy', 503));
    await s.loadMore();
    expect(s.finished.error).toBe('The store is busy.');
    expect(s.finished.next).toBe('p2');
    await s.loadMore();
    expect(s.finished.error).toBe('');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1', 'e1']);
  });

  it('drops a deleted task from the pages and the counts, and a later page cannot bring it back', async () => {
    const b = mockBackend([ended('f2', 20), ended('f1', 10)]);
    b.next = 'p2';
    b.pages.p2 = () => ({ tasks: [ended('f1', 10), ended('e1', 5)], next: '' });
    const s = new TasksStore(b, now);
    await s.reload();
    expect(s.counts.done).toBe(2);
    s.enqueue({ type: EventType.TaskDeleted, id: 'f1', prev: Status.Done });
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f2']);
    expect(s.counts.done).toBe(1);
    await s.loadMore();
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f2', 'e1']);
  });

  it('pages a search of its own, and starts it again on a reload', async () => {
    const b = mockBackend([ended('f1', 10)]);
    b.listTasks.mockImplementation(async (q?: TaskQuery) =>
      q?.q === 'deploy' ? { tasks: [ended('d9', 1, { title: 'Deploy it' })], next: '', counts: {}, concurrent } : { tasks: b.list, next: 'p2', counts: {}, concurrent },
    );
    const s = new TasksStore(b, now);
    await s.reload();
    const found = s.search({ group: 'finished', q: 'deploy' });
    await vi.waitFor(() => expect(found.started).toBe(true));
    expect(b.listTasks).toHaveBeenLastCalledWith({ group: 'finished', q: 'deploy' });
    const d9 = s.byId.get('d9');
    expect(d9 && found.reaches(d9)).toBe(true);
    expect(d9 && s.finished.reaches(d9)).toBe(false);
    await s.reload();
    expect(b.listTasks).toHaveBeenCalledTimes(4);
    found.dispose();
    await s.reload();
    expect(b.listTasks).toHaveBeenCalledTimes(5);
  });

  it('shows a task opened from elsewhere even when the pages have not reached it', async () => {
    const b = mockBackend([ended('f1', 10)]);
    b.next = 'p2';
    b.listTasks.mockImplementation(async (q?: TaskQuery) =>
      q?.q ? { tasks: [ended('old', 1, { title: 'Old one' })], next: '', counts: {}, concurrent } : { tasks: b.list, next: b.next, counts: {}, concurrent },
    );
    const s = new TasksStore(b, now);
    await s.reload();
    const [old] = await s.findFinished('old');
    expect(old?.id).toBe('old');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1']);
    s.pin('old');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1', 'old']);
  });

  it('fetches a task a chat shows once, and a chat’s tasks in one list', async () => {
    const b = mockBackend([ended('f1', 10)]);
    b.next = 'p2';
    const s = new TasksStore(b, now);
    await s.reload();
    b.list = [ended('f1', 10), ended('own', 1, { conversationId: 'c9' })];
    await s.ensure('own');
    await s.ensure('own');
    expect(b.getTask).toHaveBeenCalledTimes(1);
    expect(s.byId.get('own')?.conversationId).toBe('c9');
    expect(s.finishedShown.map((t) => t.id)).toEqual(['f1']); // not the list's: the pages have not reached it
    b.listTasks.mockResolvedValueOnce({ tasks: [ended('sent', 2, { parentConversationId: 'c1' })], next: '', counts: {}, concurrent });
    await s.loadSentBy('c1');
    await s.loadSentBy('c1');
    expect(b.listTasks).toHaveBeenLastCalledWith({ conversation: 'c1', limit: 500 });
    expect(b.listTasks).toHaveBeenCalledTimes(2);
    expect(s.byId.get('sent')?.parentConversationId).toBe('c1');
  });
});
