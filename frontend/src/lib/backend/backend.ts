import type {
  About,
  SearchQuery,
  ActivityQuery,
  ActivityPage,
  SearchResults,
  CreateRoutineRequest,
  AcceptHostKeyRequest,
  Host,
  HostList,
  HostTestResult,
  PutHostRequest,
  PatchRoutineRequest,
  RoutineCard,
  RoutineList,
  AppEvent,
  Approval,
  BackupSaved,
  Conversation,
  ConversationList,
  ConversationPage,
  ConversationQuery,
  CreateConversationRequest,
  CreateTaskRequest,
  DoctorReport,
  Fetched,
  Found,
  Message,
  OutputChunk,
  PatchConversationRequest,
  Preferences,
  Provider,
  ProviderConfig,
  PushKey,
  PushSubscriptionRecord,
  Task,
  TaskList,
  TaskQuery,
} from './contract';

/** A browser's push subscription as PushSubscription.toJSON() gives it. */
export type PushSubscriptionRequest = Pick<PushSubscriptionRecord, 'endpoint' | 'keys'> & { expirationTime?: number | null };

/**
 * Backend is everything the frontend asks of Conch. Two implementations exist:
 * the Wails bindings inside the desktop window and HTTP + WebSocket in a
 * browser; pickBackend chooses one at start-up. Every method rejects with an
 * ApiError.
 */
export interface Backend {
  /**
   * True in a browser (`conch serve`'s page), false in the window: there the
   * OS notifications are the backend's, so the page raises none of its own
   * and offers no Web Push.
   */
  readonly browser: boolean;
  /**
   * Tasks and the counts: with no query, every task that is not finished
   * and the first page of finished ones (`next` pages on); else the page
   * the query asks for.
   */
  listTasks(q?: TaskQuery): Promise<TaskList>;
  /** Starts a task; it comes back queued (or already running). */
  createTask(req: CreateTaskRequest): Promise<Task>;
  getTask(id: string): Promise<Task>;
  /**
   * Reads the task's output log from byte offset; `next` is where to read
   * from next time. The text never ends in a cut UTF-8 sequence.
   */
  readOutput(id: string, offset: number): Promise<OutputChunk>;
  stopTask(id: string): Promise<Task>;
  retryTask(id: string): Promise<Task>;
  /** Carries an interrupted, failed or stopped chat task on from where it stopped. */
  resumeTask(id: string): Promise<Task>;
  /** Shows the task's folder (its kept worktree) in the file manager of the computer Conch runs on. */
  openFolder(id: string): Promise<void>;
  deleteTask(id: string): Promise<void>;
  /** Answers the pending question askId of a task that needs the person. */
  answerTask(id: string, askId: string, allow: boolean): Promise<Task>;
  /**
   * Removes a finished helper's kept worktree and its branch. One that holds
   * work is removed only with confirm; without it the answer is a 409
   * (`conflict`) saying what it holds.
   */
  removeWorktree(id: string, confirm: boolean): Promise<Task>;
  /**
   * Brings a helper's branch from its host into this computer's clone (the
   * folder of the chat it came from): git fetch over SSH, never a merge. A
   * folder that is no clone of that repository is a 409 saying so.
   */
  fetchTask(id: string): Promise<Fetched>;
  /** Every pending question across tasks, oldest first. The app derives its list from the tasks; this is for a fresh look. */
  approvals(): Promise<Approval[]>;
  /** The doctor's report: what is wrong and where to fix it. */
  doctor(): Promise<DoctorReport>;
  /** What the page needs to know of the computer Conch runs on: the person's home folder, written as ~. */
  about(): Promise<About>;
  /** Tasks, chats and output holding q's words, best first, each with a snippet. */
  search(q: SearchQuery): Promise<SearchResults>;
  /** A page of everything that ran, day by day, newest first. */
  activity(q: ActivityQuery): Promise<ActivityPage>;
  /** The VAPID public key a browser subscribes to Web Push with (GET /api/push/key). */
  pushKey(): Promise<PushKey>;
  /** Keeps this browser's push subscription (PushSubscription.toJSON()); the same endpoint again replaces its keys. */
  subscribePush(sub: PushSubscriptionRequest): Promise<PushSubscriptionRecord>;
  /** Forgets the push subscription of endpoint (not_found when none is kept). */
  unsubscribePush(endpoint: string): Promise<void>;
  /** Every routine's card, oldest first, and the zone a routine that names none is read in. */
  listRoutines(): Promise<RoutineList>;
  /** Makes a routine; a schedule Conch does not understand rejects with code `invalid` saying what it does. */
  createRoutine(req: CreateRoutineRequest): Promise<RoutineCard>;
  getRoutine(id: string): Promise<RoutineCard>;
  /** Changes the fields sent; `paused` pauses and resumes. */
  patchRoutine(id: string, req: PatchRoutineRequest): Promise<RoutineCard>;
  /** Deletes a routine; its runs' tasks and chats stay. */
  deleteRoutine(id: string): Promise<void>;
  /** Starts a run now; rejects with `conflict` while the last run still works. */
  runRoutine(id: string): Promise<Task>;
  /** Every host (another computer over SSH), oldest first, and the runner version this Conch would start there. */
  listHosts(): Promise<HostList>;
  getHost(id: string): Promise<Host>;
  /** Adds a host (no rev; one that exists is `conflict`) or changes it (its rev). A bad target rejects with `invalid`. */
  putHost(id: string, req: PutHostRequest): Promise<Host>;
  deleteHost(id: string): Promise<void>;
  /** Connects and reports what is there; an unknown or changed key, or a password prompt, is the host's status. */
  testHost(id: string): Promise<HostTestResult>;
  /** Accepts the key waiting for the host's OK; another fingerprint, or none waiting, is `conflict`. */
  acceptHostKey(id: string, req: AcceptHostKeyRequest): Promise<Host>;
  /** The person's preferences. */
  preferences(): Promise<Preferences>;
  /** Saves the whole preferences object and returns what was saved; a bad value rejects with code `invalid`. */
  setPreferences(p: Preferences): Promise<Preferences>;
  /**
   * Takes a live backup of the store, with the output logs a tar
   * (withOutput). In a browser it is downloaded (GET /api/backup); the window
   * saves it in the Downloads folder. Resolves with its name and size, and
   * where it was saved (path, the window only).
   */
  saveBackup(withOutput: boolean): Promise<BackupSaved>;
  /**
   * The task a notification asked to show in the last 30 s, before this page
   * listened (a click that started Conch), once; '' when none. In a browser
   * always '': a notification click reaches an open page as app.open.
   */
  takeOpen(): Promise<string>;
  /**
   * A page of the person's chats (task chats left out), the most recently
   * changed first: those whose titles hold every word of q.q, q.limit of them
   * (100 when not told) after q.cursor (the next of the page before).
   */
  listConversations(q?: ConversationQuery): Promise<ConversationList>;
  createConversation(req: CreateConversationRequest): Promise<Conversation>;
  /** Up to limit messages with seq below before (0, 0: the newest 100), oldest first. */
  getConversation(id: string, before?: number, limit?: number): Promise<ConversationPage>;
  patchConversation(id: string, req: PatchConversationRequest): Promise<Conversation>;
  /** Stores the person's message; the turn then runs in the background and shows as events. */
  sendMessage(id: string, text: string): Promise<Message>;
  stopConversation(id: string): Promise<Conversation>;
  answerAsk(id: string, askId: string, allow: boolean): Promise<Conversation>;
  /** Every provider Conch knows, connected or found. */
  listProviders(): Promise<Provider[]>;
  /** Looks again for what Conch finds on its own (Ollama, CLIs on PATH, keys in the environment) and says what it found. */
  findProviders(): Promise<Found>;
  putProvider(id: string, cfg: ProviderConfig): Promise<Provider | null>;
  deleteProvider(id: string): Promise<void>;
  /**
   * Delivers live events to onEvent. onReconnect is called each time the
   * stream (re)opens, because events may have been missed while it was down,
   * and at the reconnect pace while it cannot connect: either way the caller
   * reloads the list (and so learns of a lost sign-in or a stopped server).
   * Returns a function that ends the subscription.
   */
  subscribe(onEvent: (e: AppEvent) => void, onReconnect: () => void): () => void;
}
