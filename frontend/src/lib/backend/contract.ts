// The wire contract with the Go side (docs/API.md, SPEC §2). Statuses, modes
// and event names mirror backend/task and backend/event; use these constants,
// never the bare strings.

/** Where a task stands; the values are the JSON strings of backend/task.Status. */
export const Status = {
  Queued: 'queued',
  Running: 'running',
  NeedsYou: 'needs-you',
  Done: 'done',
  Failed: 'failed',
  Stopped: 'stopped',
  Interrupted: 'interrupted',
} as const;
export type Status = (typeof Status)[keyof typeof Status];

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

/** Reports whether a task in status s holds a slot (running, or waiting on the person mid-run). */
export function isActive(s: Status): boolean {
  return s === Status.Running || s === Status.NeedsYou;
}

/** Reports whether a task in status s can be stopped. */
export function isStoppable(s: Status): boolean {
  return s === Status.Queued || s === Status.Running || s === Status.NeedsYou;
}

/** Reports whether a task in status s may be deleted (not while it holds a process). */
export function isDeletable(s: Status): boolean {
  return s !== Status.Running && s !== Status.NeedsYou;
}

/** Why a task exists: sent away by the person, or one part of a delegate call. */
export const Kind = { Background: 'background', Helper: 'helper' } as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

/** The permission level a task runs in, narrowest first. */
export const Mode = { Plan: 'plan', Ask: 'ask', Edits: 'edits', Auto: 'auto' } as const;
export type Mode = (typeof Mode)[keyof typeof Mode];

/** The provider that runs a message as a bash command; the only one so far. */
export const ShellProvider = 'shell';

/** Names of live events, as in backend/event. */
export const EventType = {
  TaskChanged: 'task.changed',
  TaskDeleted: 'task.deleted',
  /** The person clicked a task's notification: show that task. */
  AppOpen: 'app.open',
  /** The person picked a chat's question in the tray menu: show that chat. */
  AppOpenChat: 'app.open-chat',
  /**
   * The global shortcut: focus the composer, and when it already holds text,
   * send it to the background as the composer's own shortcut does.
   */
  AppCompose: 'app.compose',
} as const;

/**
 * What the desktop window's event bridge sends after it fell behind and
 * resubscribed (backend/desktop): events were missed, reload the lists.
 */
export const ReloadEventType = 'reload';
export type EventType = (typeof EventType)[keyof typeof EventType];

/** Where a finished task's result came from; `check` means it was verified. */
export const ResultSource = { Report: 'report', Turn: 'turn', Exit: 'exit', Check: 'check' } as const;
export type ResultSource = (typeof ResultSource)[keyof typeof ResultSource];

/** The pending permission question of a task that needs the person. */
export interface Ask {
  id: string;
  tool: string;
  detail: string;
  askedAt: string;
  expiresAt: string;
}

/** What a finished task produced. */
export interface Result {
  text: string;
  source: ResultSource;
  at: string;
}

/** A helper's own git worktree. */
export interface Worktree {
  path: string;
  branch: string;
  base: string;
  kept: boolean;
  work: { changed: number; untracked: number; ahead: number; behind: number; operation?: string };
}

/** The task record, as the API and the Wails bindings send it. Go nil slices arrive as null. */
export interface Task {
  id: string;
  kind: Kind;
  status: Status;
  title: string;
  text: string;
  conversationId: string;
  parentConversationId: string;
  groupId: string;
  /** A helper's place in its group (helper 2 of 3: part 2, parts 3); 0 for background tasks. Older servers leave them out. */
  part?: number;
  parts?: number;
  provider: string;
  model: string;
  by: string;
  mode: Mode;
  cwd: string;
  check: string;
  current: string;
  steps: string[] | null;
  summary: string;
  error: string;
  note: string;
  result: Result | null;
  ask: Ask | null;
  worktree: Worktree | null;
  wake: string;
  notified: boolean;
  paused: { kind: string; until?: string } | null;
  outputBytes: number;
  exitCode: number | null;
  pid: number;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  rev: number;
}

/** How many slots of one kind are in use. */
export interface Slots {
  running: number;
  limit: number;
}

/** The answer of listTasks: every task, oldest first, and the slot counts. */
export interface TaskList {
  tasks: Task[];
  concurrent: { background: Slots; helper: Slots };
}

/** The body of createTask. */
export interface CreateTaskRequest {
  text: string;
  conversationId?: string;
  title?: string;
  options?: {
    provider?: string;
    model?: string;
    mode?: Mode;
    cwd?: string;
    check?: string;
  };
}

/** A piece of a task's output log: the text from the asked offset, and where to read next. */
export interface OutputChunk {
  data: string;
  next: number;
}

/** One live update. */
export type TaskEvent =
  | { type: typeof EventType.TaskChanged; task: Task }
  | { type: typeof EventType.TaskDeleted; id: string }
  | { type: typeof EventType.AppOpen; id: string }
  | { type: typeof EventType.AppOpenChat; id: string }
  | { type: typeof EventType.AppCompose };

/** One pending question across tasks (GET /api/approvals), oldest first. */
export interface Approval {
  taskId: string;
  title: string;
  cwd: string;
  ask: Ask;
}

/** How a doctor's check came out, from fine to broken. */
export const Level = { OK: 'ok', Info: 'info', Warn: 'warn', Fail: 'fail' } as const;
export type Level = (typeof Level)[keyof typeof Level];

/** One line of the doctor's report. `link` is a page of the app ("/tasks"). */
export interface DoctorCheck {
  id: string;
  title: string;
  level: Level;
  summary: string;
  details: string[] | null;
  fix?: string;
  link?: string;
}

/** The doctor's report (GET /api/doctor); ok is false when any check failed. */
export interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

/** The person's preferences (GET|PATCH /api/preferences). */
export interface Preferences {
  /** How many tasks of each kind run at once (1–64). */
  limits: { background: number; helper: number };
  /** Which OS notifications are wanted. */
  notifications: { tasks: boolean; approvals: boolean };
  /** The most Conch may spend in a calendar month, in USD (0: no cap). */
  budget?: { monthly: number };
  /** USD per million tokens, by model id or its start; unlisted models cost nothing. */
  prices?: Record<string, { input: number; output: number; cacheRead?: number }>;
  /** The provider a task carries on with, once, when its own reaches its usage limit ('' fails the task). */
  limitFallback: string;
}

/** The bounds of the monthly budget, in USD. */
export const budgetRange = { min: 0, max: 1_000_000 } as const;

/** The bounds of each limit in preferences. */
export const limitRange = { min: 1, max: 64 } as const;

/** Error codes the gateway answers with (docs/API.md, "Errors"), plus the client's own. */
export const ErrorCode = {
  BadJSON: 'bad_json',
  UnknownField: 'unknown_field',
  Invalid: 'invalid',
  Unauthorized: 'unauthorized',
  BadHost: 'bad_host',
  BadOrigin: 'bad_origin',
  NotFound: 'not_found',
  MethodNotAllowed: 'method_not_allowed',
  InvalidTransition: 'invalid_transition',
  Conflict: 'conflict',
  TooLarge: 'too_large',
  NotJSON: 'not_json',
  /** The client's own: the server could not be reached. */
  Network: 'network',
  /** The client's own: an answer that was not the documented error shape. */
  Unknown: 'unknown',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

// ---- Conversations (chats) and providers (docs/API.md, "Conversations") ----

/** Names of the chat events. */
export const ChatEventType = {
  ConversationChanged: 'conversation.changed',
  MessageAdded: 'message.added',
  MessageDelta: 'message.delta',
} as const;
export type ChatEventType = (typeof ChatEventType)[keyof typeof ChatEventType];

/** A chat's pending question, or a settled one inside an `ask` message. */
export interface ChatAsk {
  id: string;
  callId: string;
  tool: string;
  detail: string;
  askedAt: string;
  expiresAt: string;
  answer?: AskAnswer;
}

/** How an ask was settled. */
export const AskAnswer = { Allowed: 'allowed', Declined: 'declined', TimedOut: 'timed-out', Stopped: 'stopped' } as const;
export type AskAnswer = (typeof AskAnswer)[keyof typeof AskAnswer];

/** Where a conversation came from: the person, or a task (whose chat it is; parentId is the chat the task came from). */
export interface Origin {
  kind: 'chat' | 'task';
  taskId?: string;
  parentId?: string;
}

/** The conversation record. */
export interface Conversation {
  id: string;
  title: string;
  origin: Origin;
  provider: string;
  model: string;
  mode: Mode;
  cwd: string;
  tainted: boolean;
  spent: number;
  limit: number;
  running: boolean;
  ask: ChatAsk | null;
  lastSeq: number;
  createdAt: string;
  updatedAt: string;
  rev: number;
}

/** The kinds of chat messages. */
export const MessageKind = {
  User: 'user',
  Assistant: 'assistant',
  ToolCall: 'tool-call',
  ToolResult: 'tool-result',
  Ask: 'ask',
  Notice: 'notice',
  Step: 'step',
  TaskEvent: 'task-event',
} as const;
export type MessageKind = (typeof MessageKind)[keyof typeof MessageKind];

/** What a tool call may change. */
export type Effect = 'none' | 'edit' | 'command' | 'network';

export interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
  effect: Effect;
  title: string;
}

export interface ToolResult {
  callId: string;
  name: string;
  output: string;
  isError: boolean;
}

/**
 * What a `task-event` message carries: the task as it stood at one status
 * change. The transcript folds a task's events into one card; `final` ones
 * bring a finished background task's result back into the chat.
 */
export interface TaskSnapshot {
  taskId: string;
  taskKind: Kind;
  status: Status;
  title: string;
  /** The task's own chat, when the server says it. */
  conversationId?: string;
  by?: string;
  groupId?: string;
  part?: number;
  parts?: number;
  summary?: string;
  error?: string;
  note?: string;
  branch?: string;
  final?: boolean;
}

/** One stored message; append-only, seq from 1 with no gaps. */
export interface Message {
  id: string;
  conversationId: string;
  seq: number;
  kind: MessageKind;
  text?: string;
  toolCall?: ToolCall;
  toolResult?: ToolResult;
  ask?: ChatAsk;
  /** On `task-event` messages. */
  taskEvent?: TaskSnapshot;
  createdAt: string;
}

/** A piece of an assistant reply being streamed. */
export interface MessageDelta {
  conversationId: string;
  messageId: string;
  text: string;
}

/** The body of createConversation. */
export interface CreateConversationRequest {
  title?: string;
  provider?: string;
  model?: string;
  mode?: Mode;
  cwd?: string;
  limit?: number;
}

/** The body of patchConversation. */
export interface PatchConversationRequest {
  title?: string;
  mode?: Mode;
  provider?: string;
  model?: string;
  limit?: number;
  tainted?: false;
}

/** One page of a chat's messages, oldest first. */
export interface ConversationPage {
  conversation: Conversation;
  messages: Message[];
  more: boolean;
}

/** A provider as GET /api/providers reports it; keys are never sent back. */
export interface Provider {
  id: string;
  kind: string;
  name: string;
  category: string;
  ready: boolean;
  reason: string;
  models: { default: string; fast: string; list: string[] | null };
  canAsk: boolean;
  baseUrl?: string;
  keySet: boolean;
  keyStorage?: string;
  /** Said when the key could not go to the OS keyring (it is in Conch's store). */
  keyNotice?: string;
  preset?: string;
  source: string;
}

/** The body of PUT /api/providers/:id. */
export interface ProviderConfig {
  kind: string;
  name?: string;
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  fastModel?: string;
  preset?: string;
}

/** Every event the app understands. */
export type AppEvent =
  | TaskEvent
  | { type: typeof ChatEventType.ConversationChanged; conversation: Conversation }
  | { type: typeof ChatEventType.MessageAdded; message: Message }
  | { type: typeof ChatEventType.MessageDelta; delta: MessageDelta };
