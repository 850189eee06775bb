// The approval inbox is derived from the tasks and the chats: every task
// that needs the person and carries a question, and every chat waiting on
// one. Deriving (rather than asking GET /api/approvals, which lists the
// same two) keeps it live from the same events as the cards. Its length is
// the one "needs you" count: the sidebar, the palette, the tasks page and
// Approvals all show inboxOf(...).length.

import { ApprovalKind, Status, type Approval, type Conversation, type Task } from '../backend/contract';
import { chatTitle } from '../chats/model';
import { timeOf } from '../tasks/time';

/** A task's question in the inbox. */
export type TaskApproval = Approval & { kind: typeof ApprovalKind.ApprovalTask; taskId: string };
/** A chat's own question in the inbox. */
export type ChatQuestion = Approval & { kind: typeof ApprovalKind.ApprovalChat };
/** One line of the inbox: a task's question or a chat's. */
export type InboxItem = TaskApproval | ChatQuestion;

/** Every pending question among tasks, oldest question first (ties keep the given order). */
export function approvalsOf(tasks: Iterable<Task>): TaskApproval[] {
  const out: TaskApproval[] = [];
  for (const t of tasks) {
    if (t.status !== Status.NeedsYou || !t.ask) continue;
    out.push({
      kind: ApprovalKind.ApprovalTask,
      taskId: t.id,
      conversationId: t.conversationId,
      title: t.title.trim() !== '' ? t.title : t.text,
      cwd: t.cwd,
      ask: t.ask,
    });
  }
  return out.sort((a, b) => timeOf(a.ask.askedAt) - timeOf(b.ask.askedAt));
}

/** What the sidebar says of the inbox: a count, spoken as "2 questions wait for your OK". */
export function approvalsLabel(n: number): string {
  return n === 1 ? '1 question waits for your OK' : `${n} questions wait for your OK`;
}

/** Every chat's pending question, oldest first. */
export function chatQuestionsOf(convs: Iterable<Conversation>): ChatQuestion[] {
  const out: ChatQuestion[] = [];
  for (const c of convs) {
    if (!c.ask || c.ask.answer) continue;
    out.push({ kind: ApprovalKind.ApprovalChat, conversationId: c.id, title: chatTitle(c), cwd: c.cwd, ask: c.ask });
  }
  return out.sort((a, b) => timeOf(a.ask.askedAt) - timeOf(b.ask.askedAt));
}

/** Tasks' and chats' questions in one list, oldest question first. */
export function inboxOf(tasks: readonly TaskApproval[], chats: readonly ChatQuestion[]): InboxItem[] {
  const items: InboxItem[] = [...tasks, ...chats];
  return items.sort((a, b) => timeOf(a.ask.askedAt) - timeOf(b.ask.askedAt));
}

/** The key an inbox item is known by in a list. */
export function inboxKey(i: InboxItem): string {
  return `${i.kind}:${i.ask.id}`;
}

/** The one "needs you" count: every question waiting, the tasks' and the chats'. */
export function needsYouCount(tasks: readonly TaskApproval[], chats: readonly ChatQuestion[]): number {
  return tasks.length + chats.length;
}
