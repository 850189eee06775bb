// The wire contract with the Go side (docs/API.md, SPEC §2). The records,
// statuses, kinds, modes, event names, error codes and bindings are written
// from the Go types into contract.gen.ts (`go generate ./...`; a Go test
// fails when it is stale). This file adds what only the client has: helpers
// over statuses, its own error codes, and the event union.

import { EventType, ServerErrorCode, Status, type Conversation, type Found, type Message, type MessageDelta, type Question, type Task, type TaskNotice } from './contract.gen';

export * from './contract.gen';

/** Every status, in the order the tasks page groups them. */
export const statuses: readonly Status[] = [
  Status.NeedsYou,
  Status.Running,
  Status.Queued,
  Status.Done,
  Status.Failed,
  Status.Stopped,
  Status.Interrupted,
];

/** Reports whether a task in status s has ended (and can be tried again). */
export function isFinished(s: Status): boolean {
  return s === Status.Done || s === Status.Failed || s === Status.Stopped || s === Status.Interrupted;
}

/** Reports whether a task in status s is in the middle of its run (working, or waiting on the person). */
export function isActive(s: Status): boolean {
  return s === Status.Running || s === Status.NeedsYou;
}

/** Reports whether a task in status s can be stopped. */
export function isStoppable(s: Status): boolean {
  return s === Status.Queued || s === Status.Running || s === Status.NeedsYou;
}

/**
 * Reports whether t can carry on from where it stopped (Resume): a chat task
 * that was interrupted, failed or stopped, on a provider that can carry on.
 * A command, and a chat task on the shell, can only start again.
 */
export function isResumable(t: Pick<Task, 'status' | 'conversationId'> & { provider?: string }): boolean {
  return t.conversationId !== '' && t.provider !== ShellProvider && (t.status === Status.Interrupted || t.status === Status.Failed || t.status === Status.Stopped);
}

/** Reports whether a task in status s may be deleted (not while it holds a process). */
export function isDeletable(s: Status): boolean {
  return s !== Status.Running && s !== Status.NeedsYou;
}

/** A task's pending permission question (the same record as a chat's). */
export type Ask = Question;
/** A chat's pending question, or a settled one inside an `ask` message. */
export type ChatAsk = Question;

/** The provider that runs a message as a bash command. */
export const ShellProvider = 'shell';

/** The error codes: the server's, and the client's own two. */
export const ErrorCode = {
  ...ServerErrorCode,
  /** The client's own: the server could not be reached. */
  Network: 'network',
  /** The client's own: an answer that was not the documented error shape. */
  Unknown: 'unknown',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The bounds of the monthly budget, in USD (pref.Validate). */
export const budgetRange = { min: 0, max: 1_000_000 } as const;

/** The bounds of each limit in preferences (pref.Validate). */
export const limitRange = { min: 1, max: 64 } as const;

/** The bounds of retentionDays, in days; 0 keeps finished tasks forever (pref.Validate). */
export const retentionRange = { min: 0, max: 36_500, default: 90 } as const;

/** One live update about tasks or the app. */
export type TaskEvent =
  | { type: typeof EventType.TaskChanged; task: Task; prev?: Status }
  | { type: typeof EventType.TaskDeleted; id: string; prev?: Status }
  | { type: typeof EventType.Open; id: string }
  | { type: typeof EventType.OpenChat; id: string }
  | { type: typeof EventType.Compose };

/** The notification Conch raised for a task (task.notice): a browser page shows it as its own. */
export type NoticeEvent = { type: typeof EventType.TaskNotice; task: Task; notice: TaskNotice };

/** Every event the app understands. */
export type AppEvent =
  | TaskEvent
  | { type: typeof EventType.ConversationChanged; conversation: Conversation }
  | { type: typeof EventType.MessageAdded; message: Message }
  | { type: typeof EventType.MessageDelta; delta: MessageDelta }
  | { type: typeof EventType.HostChanged; id: string }
  | { type: typeof EventType.ProvidersChanged; id: string }
  | { type: typeof EventType.TaskOutput; id: string; outputBytes: number }
  | NoticeEvent;

/** A Found with its lists never null, whatever an older Conch sent. */
export function foundOf(f: Partial<Found> | null | undefined): Found {
  return {
    ollama: { running: f?.ollama?.running ?? false, address: f?.ollama?.address ?? '', models: f?.ollama?.models ?? [] },
    clis: f?.clis ?? [],
    keys: f?.keys ?? [],
  };
}
