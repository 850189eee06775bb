// The inbox lives above the stores it reads: the tasks and the chats know
// nothing of it, and it is worked out from their live lists.

import type { Conversation, Task } from '../backend/contract';
import { approvalsOf, chatQuestionsOf, type ChatQuestion, type TaskApproval } from './approvals';

/** Inbox keeps the pending questions of the tasks and of the chats current. */
export class Inbox {
  readonly #needsYou: () => Iterable<Task>;
  readonly #chats: () => Iterable<Conversation>;

  /** Every pending task question, oldest first: the approval inbox's tasks. */
  readonly tasks: TaskApproval[] = $derived.by(() => approvalsOf(this.#needsYou()));
  /** The chats waiting on the person's answer, oldest question first: worked out when a chat changes, not each time a task does. */
  readonly chats: ChatQuestion[] = $derived.by(() => chatQuestionsOf(this.#chats()));

  /** needsYou gives the tasks' "Needs you" group; chats the person's chats (both read live). */
  constructor(needsYou: () => Iterable<Task>, chats: () => Iterable<Conversation>) {
    this.#needsYou = needsYou;
    this.#chats = chats;
  }
}
