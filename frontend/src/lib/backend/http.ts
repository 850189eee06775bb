import type { Backend, PushSubscriptionRequest } from './backend';
import {
  ErrorCode,
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
import { attachmentName, saveBlob } from './download';
import { ApiError, networkError, parseErrorResponse } from './error';
import { parseEvent } from './event';
import { leadingPartial, trailingPartial } from './utf8';

/** The most output bytes asked for in one read; the tail keeps about this much anyway. */
export const outputReadMax = 64 * 1024;

/** Reconnect delays for the event stream: doubling from min to max, with jitter. */
export const backoff = { minMs: 500, maxMs: 10_000 };

/** The delay before reconnect attempt n (0-based), jittered to 50–100 %. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const d = Math.min(backoff.maxMs, backoff.minMs * 2 ** Math.min(attempt, 10));
  return Math.round(d * (0.5 + random() / 2));
}

/** Where the event stream lives for a page at loc: same host, ws or wss. */
export function eventsURL(loc: Pick<Location, 'protocol' | 'host'>): string {
  return `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}/api/events`;
}

const taskPath = (id: string): string => `/api/tasks/${encodeURIComponent(id)}`;
const routinePath = (id: string): string => `/api/routines/${encodeURIComponent(id)}`;
const hostPath = (id: string): string => `/api/hosts/${encodeURIComponent(id)}`;
const chatPath = (id: string): string => `/api/conversations/${encodeURIComponent(id)}`;
const providerPath = (id: string): string => `/api/providers/${encodeURIComponent(id)}`;

/**
 * HttpBackend talks to `conch serve` (or the gateway inside the desktop app)
 * from a browser. Every request carries the sign-in token as a Bearer header
 * (no cookie holds it, so no other page's request can ride on it); the
 * WebSocket, which cannot send a header, opens with a one-time ticket bought
 * with the token.
 */
export class HttpBackend implements Backend {
  readonly browser = true;
  private readonly base: string;
  private readonly token: string | null;

  constructor(base = '', token: string | null = null) {
    this.base = base;
    this.token = token;
  }

  private async request(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const init: RequestInit = { method, credentials: 'omit', headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    let res: Response;
    try {
      res = await fetch(this.base + path, init);
    } catch {
      throw networkError();
    }
    if (!res.ok) {
      let text = '';
      try {
        text = await res.text();
      } catch {
        // The status alone still says what happened.
      }
      throw parseErrorResponse(res.status, text);
    }
    return res;
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.request(method, path, body);
    return (await res.json()) as T;
  }

  listTasks(q: TaskQuery = {}): Promise<TaskList> {
    return this.json<TaskList>('GET', '/api/tasks' + taskQueryString(q));
  }

  createTask(req: CreateTaskRequest): Promise<Task> {
    return this.json<Task>('POST', '/api/tasks', req);
  }

  getTask(id: string): Promise<Task> {
    return this.json<Task>('GET', taskPath(id));
  }

  async readOutput(id: string, offset: number): Promise<OutputChunk> {
    const res = await this.request('GET', `${taskPath(id)}/output?offset=${offset}&max=${outputReadMax}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const header = Number(res.headers.get('X-Next-Offset'));
    const next = Number.isFinite(header) && header >= offset && res.headers.has('X-Next-Offset') ? header : offset + bytes.length;
    // Keep whole characters only: a cut sequence at the end is read again
    // next time, a cut one at the start (a tail begun mid-file) is skipped.
    const tail = next === offset + bytes.length ? trailingPartial(bytes) : 0;
    const head = leadingPartial(bytes);
    const data = new TextDecoder().decode(bytes.subarray(head, Math.max(head, bytes.length - tail)));
    return { data, next: next - tail };
  }

  stopTask(id: string): Promise<Task> {
    return this.json<Task>('POST', `${taskPath(id)}/stop`);
  }

  retryTask(id: string): Promise<Task> {
    return this.json<Task>('POST', `${taskPath(id)}/retry`);
  }
  resumeTask(id: string): Promise<Task> {
    return this.json<Task>('POST', `${taskPath(id)}/resume`);
  }
  async openFolder(id: string): Promise<void> {
    await this.request('POST', `${taskPath(id)}/open-folder`);
  }

  async deleteTask(id: string): Promise<void> {
    await this.request('DELETE', taskPath(id));
  }

  answerTask(id: string, askId: string, allow: boolean): Promise<Task> {
    return this.json<Task>('POST', `${taskPath(id)}/answer`, { askId, allow });
  }

  removeWorktree(id: string, confirm: boolean): Promise<Task> {
    return this.json<Task>('POST', `${taskPath(id)}/remove-worktree`, { confirm });
  }

  fetchTask(id: string): Promise<Fetched> {
    return this.json<Fetched>('POST', `${taskPath(id)}/fetch`);
  }

  async approvals(): Promise<Approval[]> {
    const body = await this.json<{ approvals: Approval[] | null }>('GET', '/api/approvals');
    return body.approvals ?? [];
  }

  doctor(): Promise<DoctorReport> {
    return this.json<DoctorReport>('GET', '/api/doctor');
  }

  activity(q: ActivityQuery): Promise<ActivityPage> {
    return this.json<ActivityPage>('GET', '/api/activity' + searchQueryString(q));
  }

  search(q: SearchQuery): Promise<SearchResults> {
    return this.json<SearchResults>('GET', '/api/search' + searchQueryString(q));
  }

  about(): Promise<About> {
    return this.json<About>('GET', '/api/about');
  }

  pushKey(): Promise<PushKey> {
    return this.json<PushKey>('GET', '/api/push/key');
  }

  subscribePush(sub: PushSubscriptionRequest): Promise<PushSubscriptionRecord> {
    return this.json<PushSubscriptionRecord>('POST', '/api/push/subscriptions', sub);
  }

  async unsubscribePush(endpoint: string): Promise<void> {
    await this.request('DELETE', '/api/push/subscriptions', { endpoint });
  }

  listRoutines(): Promise<RoutineList> {
    return this.json<RoutineList>('GET', '/api/routines');
  }

  createRoutine(req: CreateRoutineRequest): Promise<RoutineCard> {
    return this.json<RoutineCard>('POST', '/api/routines', req);
  }

  getRoutine(id: string): Promise<RoutineCard> {
    return this.json<RoutineCard>('GET', routinePath(id));
  }

  patchRoutine(id: string, req: PatchRoutineRequest): Promise<RoutineCard> {
    return this.json<RoutineCard>('PATCH', routinePath(id), req);
  }

  async deleteRoutine(id: string): Promise<void> {
    await this.request('DELETE', routinePath(id));
  }

  runRoutine(id: string): Promise<Task> {
    return this.json<Task>('POST', `${routinePath(id)}/run`);
  }

  listHosts(): Promise<HostList> {
    return this.json<HostList>('GET', '/api/hosts');
  }

  getHost(id: string): Promise<Host> {
    return this.json<Host>('GET', hostPath(id));
  }

  putHost(id: string, req: PutHostRequest): Promise<Host> {
    return this.json<Host>('PUT', hostPath(id), req);
  }

  async deleteHost(id: string): Promise<void> {
    await this.request('DELETE', hostPath(id));
  }

  testHost(id: string): Promise<HostTestResult> {
    return this.json<HostTestResult>('POST', `${hostPath(id)}/test`);
  }

  acceptHostKey(id: string, req: AcceptHostKeyRequest): Promise<Host> {
    return this.json<Host>('POST', `${hostPath(id)}/accept-key`, req);
  }

  preferences(): Promise<Preferences> {
    return this.json<Preferences>('GET', '/api/preferences');
  }

  setPreferences(p: Preferences): Promise<Preferences> {
    return this.json<Preferences>('PATCH', '/api/preferences', p);
  }

  async saveBackup(withOutput: boolean, save: (blob: Blob, name: string) => void = saveBlob): Promise<BackupSaved> {
    const res = await this.request('GET', withOutput ? '/api/backup?output=1' : '/api/backup');
    let blob: Blob;
    try {
      blob = await res.blob();
    } catch {
      // The server aborts a backup that broke off rather than end it early.
      throw new ApiError(ErrorCode.Network, 'The backup broke off before it was whole; try again.');
    }
    const name = attachmentName(res.headers.get('Content-Disposition')) ?? (withOutput ? 'conch-backup.tar' : 'conch-backup.db');
    save(blob, name);
    return { path: '', name, bytes: blob.size, tar: withOutput };
  }

  takeOpen(): Promise<string> {
    return Promise.resolve('');
  }

  async listConversations(q: ConversationQuery = {}): Promise<ConversationList> {
    const body = await this.json<ConversationList>('GET', '/api/conversations' + conversationQueryString(q));
    return { conversations: body.conversations ?? [], next: body.next ?? '' };
  }

  createConversation(req: CreateConversationRequest): Promise<Conversation> {
    return this.json<Conversation>('POST', '/api/conversations', req);
  }

  async getConversation(id: string, before = 0, limit = 0): Promise<ConversationPage> {
    const q = new URLSearchParams();
    if (before > 0) q.set('before', String(before));
    if (limit > 0) q.set('limit', String(limit));
    const qs = q.toString();
    const page = await this.json<ConversationPage>('GET', chatPath(id) + (qs ? `?${qs}` : ''));
    return { ...page, messages: page.messages ?? [] };
  }

  patchConversation(id: string, req: PatchConversationRequest): Promise<Conversation> {
    return this.json<Conversation>('PATCH', chatPath(id), req);
  }

  sendMessage(id: string, text: string): Promise<Message> {
    return this.json<Message>('POST', `${chatPath(id)}/messages`, { text });
  }

  stopConversation(id: string): Promise<Conversation> {
    return this.json<Conversation>('POST', `${chatPath(id)}/stop`);
  }

  answerAsk(id: string, askId: string, allow: boolean): Promise<Conversation> {
    return this.json<Conversation>('POST', `${chatPath(id)}/asks/${encodeURIComponent(askId)}`, { allow });
  }

  async listProviders(): Promise<Provider[]> {
    const body = await this.json<{ providers: Provider[] | null }>('GET', '/api/providers');
    return body.providers ?? [];
  }

  async findProviders(): Promise<Found> {
    return foundOf(await this.json<Found>('GET', '/api/found'));
  }

  async putProvider(id: string, cfg: ProviderConfig): Promise<Provider | null> {
    const res = await this.request('PUT', providerPath(id), cfg);
    const text = await res.text();
    if (text.trim() === '') return null;
    try {
      return JSON.parse(text) as Provider;
    } catch {
      return null;
    }
  }

  async deleteProvider(id: string): Promise<void> {
    await this.request('DELETE', providerPath(id));
  }

  /** A one-time pass to the event stream, good for 30 seconds. */
  private async ticket(): Promise<string> {
    const body = await this.json<{ ticket: string }>('POST', '/api/events/ticket');
    return body.ticket;
  }

  subscribe(onEvent: (e: AppEvent) => void, onReconnect: () => void): () => void {
    const url = this.base === '' ? eventsURL(window.location) : eventsURL(new URL(this.base));
    let ws: WebSocket | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let attempt = 0;
    let ended = false;
    let connecting = false;

    const retry = (): void => {
      // A refused ticket or stream: after a second failure in a row, have
      // the caller reload, and its request learns whether Conch is gone or
      // the sign-in is no longer valid.
      if (attempt >= 1) onReconnect();
      timer = setTimeout(connect, backoffDelay(attempt++));
    };

    const connect = (): void => {
      timer = undefined;
      if (ended || connecting) return;
      connecting = true;
      this.ticket().then(
        (ticket) => {
          connecting = false;
          if (ended) return;
          open(ticket);
        },
        () => {
          connecting = false;
          if (!ended) retry();
        },
      );
    };

    const open = (ticket: string): void => {
      const sock = new WebSocket(`${url}?ticket=${encodeURIComponent(ticket)}`);
      let opened = false;
      ws = sock;
      sock.onopen = () => {
        opened = true;
        attempt = 0;
        onReconnect();
      };
      sock.onmessage = (m: MessageEvent) => {
        const e = parseEvent(m.data);
        if (e) onEvent(e);
      };
      sock.onclose = () => {
        if (ws !== sock || ended) return;
        ws = null;
        // A browser does not say why a WebSocket was refused.
        if (!opened) {
          retry();
          return;
        }
        timer = setTimeout(connect, backoffDelay(attempt++));
      };
    };
    // Coming back from sleep or a lost network: try at once rather than wait out the backoff.
    const now = (): void => {
      if (ws === null && timer !== undefined && !ended && !connecting) {
        clearTimeout(timer);
        connect();
      }
    };
    window.addEventListener('online', now);
    document.addEventListener('visibilitychange', now);
    connect();
    return () => {
      ended = true;
      window.removeEventListener('online', now);
      document.removeEventListener('visibilitychange', now);
      if (timer !== undefined) clearTimeout(timer);
      ws?.close();
      ws = null;
    };
  }
}

/** The query string of GET /api/tasks for q ('' when it asks for nothing). */
/** The query string of GET /api/conversations for q ('' when it asks for nothing). */
export function conversationQueryString(q: ConversationQuery): string {
  const p = new URLSearchParams();
  if (q.q) p.set('q', q.q);
  if (q.cursor) p.set('cursor', q.cursor);
  if (q.limit) p.set('limit', String(q.limit));
  const s = p.toString();
  return s ? '?' + s : '';
}

/** The query string of GET /api/search (or /api/activity) for q: the fields that are set. */
export function searchQueryString(q: SearchQuery | ActivityQuery): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v !== undefined && v !== '' && v !== 0) p.set(k, String(v));
  }
  const s = p.toString();
  return s ? '?' + s : '';
}

export function taskQueryString(q: TaskQuery): string {
  const p = new URLSearchParams();
  if (q.group) p.set('group', q.group);
  if (q.statuses?.length) p.set('status', q.statuses.join(','));
  if (q.q) p.set('q', q.q);
  if (q.conversation) p.set('conversation', q.conversation);
  if (q.cursor) p.set('cursor', q.cursor);
  if (q.limit) p.set('limit', String(q.limit));
  const s = p.toString();
  return s ? '?' + s : '';
}
