// The approval inbox is derived from the tasks: every task that needs the
// person and carries a question. Deriving (rather than asking GET
// /api/approvals) keeps it live from the same events as the cards.

import { Status, type Approval, type Task } from '../backend/contract';
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
