// The approval inbox is derived from the tasks: every task that needs the
// person and carries a question. Deriving (rather than asking GET
// /api/approvals) keeps it live from the same events as the cards.

import { Status, type Approval, type ChatAsk, type Conversation, type Task } from '../backend/contract';
import { chatTitle } from '../chats/model';
import { timeOf } from '../tasks/time';

/** Every pending question among tasks, oldest question first (ties keep the given order). */
export function approvalsOf(tasks: Iterable<Task>): Approval[] {
  const out: Approval[] = [];
  for (const t of tasks) {
    if (t.status !== Status.NeedsYou || !t.ask) continue;
    out.push({ taskId: t.id, title: t.title.trim() !== '' ? t.title : t.text, cwd: t.cwd, ask: t.ask });
  }
  return out.sort((a, b) => timeOf(a.ask.askedAt) - timeOf(b.ask.askedAt));
}

/** What the sidebar says of the inbox: a count, spoken as "2 questions wait for your OK". */
export function approvalsLabel(n: number): string {
  return n === 1 ? '1 question waits for your OK' : `${n} questions wait for your OK`;
}

/** A question a chat is waiting on. */
export interface ChatQuestion {
  conversationId: string;
  title: string;
  cwd: string;
  ask: ChatAsk;
}

/** Every chat's pending question, oldest first. */
export function chatQuestionsOf(convs: Iterable<Conversation>): ChatQuestion[] {
  const out: ChatQuestion[] = [];
  for (const c of convs) {
    if (!c.ask || c.ask.answer) continue;
    out.push({ conversationId: c.id, title: chatTitle(c), cwd: c.cwd, ask: c.ask });
  }
  return out.sort((a, b) => timeOf(a.ask.askedAt) - timeOf(b.ask.askedAt));
}

/** One line of the inbox: a task's question or a chat's. */
export type InboxItem = ({ kind: 'task' } & Approval) | ({ kind: 'chat' } & ChatQuestion);

/** Tasks' and chats' questions in one list, oldest question first. */
export function inboxOf(tasks: readonly Approval[], chats: readonly ChatQuestion[]): InboxItem[] {
  const items: InboxItem[] = [...tasks.map((a) => ({ kind: 'task' as const, ...a })), ...chats.map((q) => ({ kind: 'chat' as const, ...q }))];
  return items.sort((a, b) => timeOf(a.ask.askedAt) - timeOf(b.ask.askedAt));
}
