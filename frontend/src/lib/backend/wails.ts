import type { Backend, PushSubscriptionRequest } from './backend';
import {
  EventType,
  foundOf,
  type About,
  type SearchQuery,
  type ActivityQuery,
  type ActivityPage,
  type SearchResults,
  type CreateRoutineRequest,
  type AcceptHostKeyRequest,
  type Fetched,
  type Host,
  type HostList,
  type HostTestResult,
  type PutHostRequest,
  type PatchRoutineRequest,
  type RoutineCard,
  type RoutineList,
  type AppEvent,
  type Bindings,
  type Approval,
  type BackupSaved,
  type Conversation,
  type ConversationList,
  type ConversationPage,
  type ConversationQuery,
  type CreateConversationRequest,
  type CreateTaskRequest,
  type DoctorReport,
  type Found,
  type Message,
  type OutputChunk,
  type PatchConversationRequest,
  type Preferences,
  type Provider,
  type ProviderConfig,
  type PushKey,
  type PushSubscriptionRecord,
  type Task,
  type TaskList,
  type TaskQuery,
} from './contract';
import { toApiError } from './error';
import { outputReadMax } from './http';
import { parseEvent } from './event';

/** The Go methods Wails binds on window.go.service.Service, written from service.API (contract.gen.ts). */
export type AppBindings = Bindings;

/** The part of the Wails runtime the frontend uses. */
export interface WailsRuntime {
  EventsOn(name: string, cb: (...data: unknown[]) => void): () => void;
}

/** The Wails event that carries task events, with the WebSocket's JSON. */
export const wailsEventName = 'conch:event';

declare global {
  interface Window {
    go?: { service?: { Service?: AppBindings } };
    runtime?: WailsRuntime;
  }
}

function isReload(data: unknown): boolean {
  return typeof data === 'object' && data !== null && (data as { type?: unknown }).type === EventType.Reload;
}

async function call<T>(p: () => Promise<T>): Promise<T> {
  try {
    return await p();
  } catch (e) {
    throw toApiError(e);
  }
}

/** WailsBackend calls the desktop app's Go methods directly; there is no sign-in and no reconnecting. */
export class WailsBackend implements Backend {
  readonly browser = false;
  private readonly app: AppBindings;
  private readonly runtime: WailsRuntime | undefined;

  constructor(app: AppBindings, runtime: WailsRuntime | undefined) {
    this.app = app;
    this.runtime = runtime;
  }

  listTasks(q: TaskQuery = {}): Promise<TaskList> {
    return call(() => this.app.ListTasks(q));
  }
  createTask(req: CreateTaskRequest): Promise<Task> {
    return call(() => this.app.CreateTask(req));
  }
  getTask(id: string): Promise<Task> {
    return call(() => this.app.GetTask(id));
  }
  readOutput(id: string, offset: number): Promise<OutputChunk> {
    return call(() => this.app.ReadOutput(id, offset, outputReadMax));
  }
  stopTask(id: string): Promise<Task> {
    return call(() => this.app.StopTask(id));
  }
  retryTask(id: string): Promise<Task> {
    return call(() => this.app.RetryTask(id));
  }
  resumeTask(id: string): Promise<Task> {
    return call(() => this.app.ResumeTask(id));
  }
  async openFolder(id: string): Promise<void> {
    await call(() => this.app.OpenFolder(id));
  }
  async deleteTask(id: string): Promise<void> {
    await call(() => this.app.DeleteTask(id));
  }
  answerTask(id: string, askId: string, allow: boolean): Promise<Task> {
    return call(() => this.app.AnswerTask(id, askId, allow));
  }
  async approvals(): Promise<Approval[]> {
    return (await call(() => this.app.Approvals())) ?? [];
  }
  fetchTask(id: string): Promise<Fetched> {
    return call(() => this.app.FetchTask(id));
  }

  removeWorktree(id: string, confirm: boolean): Promise<Task> {
    return call(() => this.app.RemoveWorktree(id, confirm));
  }
  doctor(): Promise<DoctorReport> {
    return call(() => this.app.Doctor());
  }
  activity(q: ActivityQuery): Promise<ActivityPage> {
    return call(() => this.app.Activity(q));
  }

  search(q: SearchQuery): Promise<SearchResults> {
    return call(() => this.app.Search(q));
  }

  about(): Promise<About> {
    return call(() => this.app.About());
  }
  pushKey(): Promise<PushKey> {
    return call(() => this.app.PushKey());
  }
  async subscribePush(sub: PushSubscriptionRequest): Promise<PushSubscriptionRecord> {
    return (await call(() => this.app.SubscribePush({ ...sub, expirationTime: sub.expirationTime ?? undefined, addedAt: '' }))).subscription;
  }
  unsubscribePush(endpoint: string): Promise<void> {
    return call(() => this.app.UnsubscribePush(endpoint));
  }
  listRoutines(): Promise<RoutineList> {
    return call(() => this.app.ListRoutines());
  }
  createRoutine(req: CreateRoutineRequest): Promise<RoutineCard> {
    return call(() => this.app.CreateRoutine(req));
  }
  getRoutine(id: string): Promise<RoutineCard> {
    return call(() => this.app.GetRoutine(id));
  }
  patchRoutine(id: string, req: PatchRoutineRequest): Promise<RoutineCard> {
    return call(() => this.app.PatchRoutine(id, req));
  }
  async deleteRoutine(id: string): Promise<void> {
    await call(() => this.app.DeleteRoutine(id));
  }
  runRoutine(id: string): Promise<Task> {
    return call(() => this.app.RunRoutine(id));
  }
  listHosts(): Promise<HostList> {
    return call(() => this.app.ListHosts());
  }
  getHost(id: string): Promise<Host> {
    return call(() => this.app.GetHost(id));
  }
  putHost(id: string, req: PutHostRequest): Promise<Host> {
    return call(() => this.app.PutHost(id, req));
  }
  async deleteHost(id: string): Promise<void> {
    await call(() => this.app.DeleteHost(id));
  }
  testHost(id: string): Promise<HostTestResult> {
    return call(() => this.app.TestHost(id));
  }
  acceptHostKey(id: string, req: AcceptHostKeyRequest): Promise<Host> {
    return call(() => this.app.AcceptHostKey(id, req));
  }
  preferences(): Promise<Preferences> {
    return call(() => this.app.Preferences());
  }
  setPreferences(p: Preferences): Promise<Preferences> {
    return call(() => this.app.SetPreferences(p));
  }
  saveBackup(withOutput: boolean): Promise<BackupSaved> {
    return call(() => this.app.SaveBackup(withOutput));
  }
  takeOpen(): Promise<string> {
    return call(() => this.app.TakeOpen());
  }

  async listConversations(q: ConversationQuery = {}): Promise<ConversationList> {
    const l = await call(() => this.app.ListConversations(q));
    return { conversations: l.conversations ?? [], next: l.next ?? '' };
  }
  createConversation(req: CreateConversationRequest): Promise<Conversation> {
    return call(() => this.app.CreateConversation(req));
  }
  async getConversation(id: string, before = 0, limit = 0): Promise<ConversationPage> {
    const page = await call(() => this.app.GetConversation(id, before, limit));
    return { ...page, messages: page.messages ?? [] };
  }
  patchConversation(id: string, req: PatchConversationRequest): Promise<Conversation> {
    return call(() => this.app.PatchConversation(id, req));
  }
  sendMessage(id: string, text: string): Promise<Message> {
    return call(() => this.app.SendMessage(id, text));
  }
  stopConversation(id: string): Promise<Conversation> {
    return call(() => this.app.StopConversation(id));
  }
  answerAsk(id: string, askId: string, allow: boolean): Promise<Conversation> {
    return call(() => this.app.AnswerAsk(id, askId, allow));
  }
  async listProviders(): Promise<Provider[]> {
    return (await call(() => this.app.ListProviders())).providers ?? [];
  }
  async findProviders(): Promise<Found> {
    return foundOf(await call(() => this.app.FindProviders()));
  }
  putProvider(id: string, cfg: ProviderConfig): Promise<Provider | null> {
    return call(() => this.app.PutProvider(id, cfg));
  }
  async deleteProvider(id: string): Promise<void> {
    await call(() => this.app.DeleteProvider(id));
  }

  subscribe(onEvent: (e: AppEvent) => void, onReconnect: () => void): () => void {
    const off = this.runtime?.EventsOn(wailsEventName, (data: unknown) => {
      if (isReload(data)) {
        onReconnect();
        return;
      }
      const e = parseEvent(data);
      if (e) onEvent(e);
    });
    // The window's event channel never drops, but say it opened so the
    // caller's first load and the stream line up the same way as over HTTP.
    let ended = false;
    queueMicrotask(() => {
      if (!ended) onReconnect();
    });
    return () => {
      ended = true;
      off?.();
    };
  }
}
