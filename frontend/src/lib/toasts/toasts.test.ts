import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Status, type Ask } from '../backend/contract';
import { Page } from '../nav.svelte';
import { makeTask } from '../backend/fixture';
import { ToastKind, toastFor, type View } from './rules';
import { ToastStore, maxToasts, toastMs } from './toasts.svelte';

const away: View = { page: Page.Approvals, visible: true, focused: true };
const watching: View = { page: Page.Tasks, visible: true, focused: true };
const ask: Ask = { id: 'k1', tool: 'bash', detail: 'Run `rm -rf build` in ~/proj?', askedAt: '2026-11-30T06:00:00Z', expiresAt: '2026-11-30T07:00:00Z' };

describe('toastFor', () => {
  const running = makeTask({ id: 'a', title: 'Tidy the README', status: Status.Running, rev: 2 });

  it('says a task finished, with the first line of its summary', () => {
    const done = makeTask({ id: 'a', title: 'Tidy the README', status: Status.Done, summary: '3 files changed\nand more', rev: 3 });
    expect(toastFor(running, done, away)).toEqual({
      kind: ToastKind.Finished,
      taskId: 'a',
      tone: 'green',
      title: 'Tidy the README — done',
      body: '3 files changed',
    });
  });

  it('says why a task did not finish', () => {
    const failed = makeTask({ id: 'a', title: 'Tidy the README', status: Status.Failed, exitCode: 2, rev: 3 });
    expect(toastFor(running, failed, away)).toMatchObject({ tone: 'red', title: "Tidy the README — didn't finish", body: 'exited with code 2' });
    const withError = makeTask({ id: 'a', status: Status.Failed, error: 'No space left. Try later.', rev: 3 });
    expect(toastFor(running, withError, away)?.body).toBe('No space left.');
  });

  it('names a kept branch', () => {
    const done = makeTask({
      id: 'a',
      status: Status.Done,
      summary: 'ok',
      worktree: { path: '/w', branch: 'conch/a', base: 'main', kept: true, work: { changed: 1, untracked: 0, ahead: 1, behind: 0 } },
    });
    expect(toastFor(running, done, away)?.body).toBe('ok · kept on conch/a');
  });

  it('raises nothing on a first sight, a stop, or a task that was already finished', () => {
    expect(toastFor(undefined, makeTask({ id: 'a', status: Status.Done }), away)).toBeNull();
    expect(toastFor(running, makeTask({ id: 'a', status: Status.Stopped }), away)).toBeNull();
    expect(toastFor(makeTask({ id: 'a', status: Status.Done }), makeTask({ id: 'a', status: Status.Done, rev: 2 }), away)).toBeNull();
  });

  it('raises nothing while the person looks at the chat the task came from', () => {
    const from = makeTask({ id: 'a', status: Status.Running, parentConversationId: 'c1', rev: 2 });
    const done = makeTask({ id: 'a', status: Status.Done, parentConversationId: 'c1', rev: 3 });
    expect(toastFor(from, done, { page: Page.Chat, chat: 'c1', visible: true, focused: true })).toBeNull();
    expect(toastFor(from, done, { page: Page.Chat, chat: 'c2', visible: true, focused: true })?.tone).toBe('green');
    expect(toastFor(from, done, { page: Page.Chat, chat: 'c1', visible: true, focused: false })?.tone).toBe('green');
  });

  it('raises no question toast while the person looks at the task’s chat or the one it came from', () => {
    const from = makeTask({ id: 'a', status: Status.Running, parentConversationId: 'c1', conversationId: 'tc', rev: 2 });
    const asking = makeTask({ id: 'a', status: Status.NeedsYou, parentConversationId: 'c1', conversationId: 'tc', ask, rev: 3 });
    expect(toastFor(from, asking, { page: Page.Chat, chat: 'c1', visible: true, focused: true })).toBeNull();
    expect(toastFor(from, asking, { page: Page.Chat, chat: 'tc', visible: true, focused: true })).toBeNull();
    expect(toastFor(from, asking, { page: Page.Chat, chat: 'other', visible: true, focused: true })?.tone).toBe('amber');
  });

  it('counts a queued task that fails at once', () => {
    expect(toastFor(makeTask({ id: 'a' }), makeTask({ id: 'a', status: Status.Failed, error: 'bash is missing' }), away)?.tone).toBe('red');
  });

  it('stays quiet while the person looks at the tasks page', () => {
    const done = makeTask({ id: 'a', status: Status.Done, rev: 3 });
    expect(toastFor(running, done, watching)).toBeNull();
    expect(toastFor(running, done, { ...watching, focused: false })).not.toBeNull();
    expect(toastFor(running, done, { ...watching, visible: false })).not.toBeNull();
    expect(toastFor(running, done, { page: Page.Doctor, visible: true, focused: true })).not.toBeNull();
  });

  it('tells of a new question away from the approvals and tasks pages', () => {
    const asking = makeTask({ id: 'a', title: 'Clean', status: Status.NeedsYou, ask, rev: 3 });
    expect(toastFor(running, asking, { page: Page.Settings, visible: true, focused: true })).toEqual({
      kind: ToastKind.Question,
      taskId: 'a',
      tone: 'amber',
      title: 'Clean — needs your OK',
      body: ask.detail,
    });
    expect(toastFor(running, asking, away)).toBeNull();
    expect(toastFor(running, asking, { ...watching, focused: false })).toBeNull();
    // The same question again (another change to the task) is not new.
    expect(toastFor(asking, { ...asking, rev: 4 }, { page: Page.Doctor, visible: true, focused: true })).toBeNull();
  });
});

describe('ToastStore', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const spec = (taskId: string, kind: ToastKind = ToastKind.Finished) => ({ kind, taskId, tone: 'green' as const, title: `${taskId} — done`, body: '' });

  it('goes after the timeout', () => {
    const s = new ToastStore();
    s.show(spec('a'));
    vi.advanceTimersByTime(toastMs - 1);
    expect(s.items).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(s.items).toHaveLength(0);
  });

  it('stays while hovered or focused, and gets its full time again after', () => {
    const s = new ToastStore();
    const id = s.show(spec('a'));
    vi.advanceTimersByTime(toastMs - 100);
    s.hold(id, 'hover');
    s.hold(id, 'focus');
    vi.advanceTimersByTime(toastMs * 3);
    expect(s.items).toHaveLength(1);
    s.release(id, 'hover');
    vi.advanceTimersByTime(toastMs * 3);
    expect(s.items).toHaveLength(1); // still focused
    s.release(id, 'focus');
    vi.advanceTimersByTime(toastMs - 1);
    expect(s.items).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(s.items).toHaveLength(0);
  });

  it('replaces an older toast about the same task, and keeps at most a few', () => {
    const s = new ToastStore();
    s.show(spec('a'));
    s.show(spec('a', ToastKind.Question));
    s.show(spec('a'));
    expect(s.items.map((t) => `${t.taskId}/${t.kind}`)).toEqual(['a/question', 'a/finished']);
    for (const id of ['b', 'c', 'd', 'e']) s.show(spec(id));
    expect(s.items).toHaveLength(maxToasts);
    expect(s.items.map((t) => t.taskId)).toEqual(['b', 'c', 'd', 'e']);
  });

  it('dismisses at once, and a late release does nothing', () => {
    const s = new ToastStore();
    const id = s.show(spec('a'));
    s.hold(id, 'focus');
    s.dismiss(id);
    s.release(id, 'focus');
    expect(s.items).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
