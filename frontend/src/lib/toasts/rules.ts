// When the app raises a toast, and what it says. The OS notification is the
// backend's job; in the window a toast takes its place, unless the person is
// already looking at the task (the tasks page, or the chat it came from,
// visible and focused).

import { Status, isFinished, type Task } from '../backend/contract';
import { Page } from '../nav.svelte';
import { failureReason, firstSentence } from '../tasks/language';

/** Why a toast was raised. */
export const ToastKind = { Finished: 'finished', Question: 'question' } as const;
export type ToastKind = (typeof ToastKind)[keyof typeof ToastKind];

/** What the person is looking at when an event arrives. */
export interface View {
  page: Page;
  /** The document is visible (not a hidden tab or a minimised window). */
  visible: boolean;
  /** The document has the keyboard focus. */
  focused: boolean;
  /** On the chat page: the chat shown. */
  chat?: string;
}

/** A toast to show: its words, colour and the task it is about. */
export interface ToastSpec {
  kind: ToastKind;
  taskId: string;
  /** Green for done, red for didn't finish, amber for a question. */
  tone: 'green' | 'red' | 'amber';
  /** The task's title and what happened: "Tidy the README — done". */
  title: string;
  /** One line: the summary's first line, the reason, or the question. */
  body: string;
}

function titleOf(t: Task): string {
  return t.title.trim() !== '' ? t.title.trim() : t.text.trim();
}

function firstLine(s: string): string {
  return (s.trim().split('\n')[0] ?? '').trim();
}

/** Reports whether the person already sees the tasks page (so a finish needs no toast). */
export function looksAtTasks(v: View): boolean {
  return v.page === Page.Tasks && v.visible && v.focused;
}

/** Reports whether the person already sees the chat t came from (its card is there) or its own chat. */
export function looksAtChatOf(t: Pick<Task, 'parentConversationId' | 'conversationId'>, v: View): boolean {
  if (v.page !== Page.Chat || !v.visible || !v.focused || !v.chat) return false;
  return v.chat === t.parentConversationId || v.chat === t.conversationId;
}

/**
 * The toast a live change from before to after deserves, or null. A task
 * that was not finished and is now done or failed raises a finish toast
 * unless the person looks at the tasks page or its chat; a new question
 * raises one unless the person is on the approvals or tasks page or looks at
 * its chat (all show it).
 */
export function toastFor(before: Task | undefined, after: Task, view: View): ToastSpec | null {
  const title = titleOf(after);
  if (before !== undefined && !isFinished(before.status) && (after.status === Status.Done || after.status === Status.Failed)) {
    if (looksAtTasks(view) || looksAtChatOf(after, view)) return null;
    if (after.status === Status.Done) {
      const parts = [firstLine(after.summary) || firstLine(after.result?.text ?? '')];
      if (after.worktree?.kept) parts.push(`kept on ${after.worktree.branch}`);
      return { kind: ToastKind.Finished, taskId: after.id, tone: 'green', title: `${title} — done`, body: parts.filter((p) => p !== '').join(' · ') };
    }
    const reason = firstSentence(failureReason(after)) || 'it stopped without saying why';
    return { kind: ToastKind.Finished, taskId: after.id, tone: 'red', title: `${title} — didn't finish`, body: reason };
  }
  if (after.status === Status.NeedsYou && after.ask && before?.ask?.id !== after.ask.id) {
    if (view.page === Page.Approvals || view.page === Page.Tasks || looksAtChatOf(after, view)) return null;
    return { kind: ToastKind.Question, taskId: after.id, tone: 'amber', title: `${title} — needs your OK`, body: after.ask.detail };
  }
  return null;
}
