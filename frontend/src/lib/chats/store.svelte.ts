// The plain Maps here are bookkeeping that no view reads.
/* eslint-disable svelte/prefer-svelte-reactivity */
import { SvelteMap } from 'svelte/reactivity';
import type { Backend } from '../backend/backend';
import {
  ApprovalKind,
  EventType,

  type AppEvent,
  type Conversation,
  type CreateConversationRequest,
  type Message,
  type PatchConversationRequest,
  type Provider,
  type ProviderConfig,
} from '../backend/contract';
import { toApiError, type ApiError } from '../backend/error';
import { timeOf } from '../tasks/time';

/** How many chats one page of the chat list holds. */
export const chatPage = 100;
import { sentence } from '../tasks/store.svelte';

/** The loaded part of one chat: its messages by seq and the replies streaming in. */
export class ChatDetail {
  /** Stored messages, oldest first. */
  messages: Message[] = $state([]);
  /** Streamed text of replies not stored yet, by message id. */
  readonly streaming = new SvelteMap<string, string>();
  /** True when older messages remain on the server. */
  more = $state(false);
  loaded = $state(false);
  error = $state('');

  /** Adds a stored message (once, in seq order); its streamed copy goes. */
  add(m: Message): void {
    this.streaming.delete(m.id);
    if (this.messages.some((x) => x.id === m.id)) return;
    const last = this.messages[this.messages.length - 1];
    if (!last || last.seq < m.seq) this.messages.push(m);
    else this.messages = [...this.messages, m].sort((a, b) => a.seq - b.seq);
  }

  /** Appends a streamed piece of a reply, unless the whole reply is already stored. */
  delta(messageId: string, text: string): void {
    if (this.messages.some((x) => x.id === messageId)) return;
    this.streaming.set(messageId, (this.streaming.get(messageId) ?? '') + text);
  }
}

/**
 * ChatsStore holds every chat (the newest copy by rev), the loaded messages
 * of the chats that were opened, and the providers list.
 */
export class ChatsStore {
  readonly byId = new SvelteMap<string, Conversation>();
  readonly details = new SvelteMap<string, ChatDetail>();
  /** Actions' errors per chat, in one sentence. */
  readonly errors = new SvelteMap<string, string>();
  providers: Provider[] = $state([]);
  providersLoaded = $state(false);
  /** One sentence when the providers could not be listed. */
  providersError = $state('');
  loaded = $state(false);
  /** Which chat the chat page shows. */
  current: string | null = $state(null);

  /**
   * The person's chats the loaded pages cover, for the sidebar: a chat held
   * for another reason (a task chat's parent, a search) that is older than
   * the last page reached waits until the pages get there.
   */
  readonly list: Conversation[] = $derived([...this.byId.values()].filter((c) => c.origin.kind !== 'task' && c.origin.kind !== 'routine' && timeOf(c.updatedAt) >= this.boundary));
  /** The cursor of the next page of the chat list; '' when the pages reached the end. */
  next = $state('');
  /** When the oldest chat of the loaded pages changed (-Infinity once every page is loaded). */
  boundary = $state(Number.NEGATIVE_INFINITY);
  /** True while a page of older chats is on its way. */
  loadingMore = $state(false);
  /** Why the last page of older chats could not be loaded, in one sentence. */
  moreError = $state('');
  /** How many pages of the list are loaded, so a reload brings as many back. */
  #pages = 1;
  /** Counts reloads, so a page asked for before one does not land after it. */
  #gen = 0;
  readonly ready: Provider[] = $derived(this.providers.filter((p) => p.ready));

  readonly #backend: Backend;

  constructor(backend: Backend) {
    this.#backend = backend;
  }

  /** Applies one live chat event. */
  apply(e: AppEvent): void {
    if (e.type === EventType.ConversationChanged) this.put(e.conversation);
    else if (e.type === EventType.MessageAdded) this.details.get(e.message.conversationId)?.add(e.message);
    else if (e.type === EventType.MessageDelta) this.details.get(e.delta.conversationId)?.delta(e.delta.messageId, e.delta.text);
  }

  /** Keeps c unless a newer copy (higher rev) is already held. */
  put(c: Conversation): void {
    const have = this.byId.get(c.id);
    if (have && have.rev >= c.rev) return;
    this.byId.set(c.id, c);
  }

  /**
   * Loads the list, as many pages as were loaded, and again the open chats
   * (events may have been missed); a chat waiting for an answer further down
   * is fetched too, so the "needs you" count never misses it.
   */
  async reload(): Promise<void> {
    const gen = ++this.#gen;
    this.loadingMore = false;
    this.moreError = '';
    try {
      const held: Conversation[] = [];
      let cursor = '';
      let pages = 0;
      do {
        const page = await this.#backend.listConversations({ cursor, limit: chatPage });
        if (gen !== this.#gen) return;
        held.push(...page.conversations);
        cursor = page.next;
        pages++;
      } while (cursor !== '' && pages < this.#pages);
      const ids = new Set(held.map((c) => c.id));
      for (const id of [...this.byId.keys()]) if (!ids.has(id) && !this.details.has(id)) this.byId.delete(id);
      for (const c of held) this.put(c);
      this.#took(held, cursor);
      this.#pages = pages;
      this.loaded = true;
      if (cursor !== '') void this.#ensureAsking();
    } catch {
      // The tasks list, loaded at the same moment, says when Conch cannot be reached.
    }
    for (const id of this.details.keys()) void this.load(id);
  }

  /** Notes how far a page that arrived reached. */
  #took(page: readonly Conversation[], next: string): void {
    this.next = next;
    if (next === '') {
      this.boundary = Number.NEGATIVE_INFINITY;
      return;
    }
    let low = Number.POSITIVE_INFINITY;
    for (const c of page) low = Math.min(low, timeOf(c.updatedAt));
    this.boundary = low;
  }

  /** Fetches the chats that wait for an answer and are not held. */
  async #ensureAsking(): Promise<void> {
    try {
      for (const a of await this.#backend.approvals()) if (a.kind === ApprovalKind.ApprovalChat) void this.ensure(a.conversationId);
    } catch {
      // The next reload tries again.
    }
  }

  /** Loads the next page of older chats, unless one is on its way or there is none. */
  async loadMore(): Promise<void> {
    if (this.next === '' || this.loadingMore) return;
    const gen = this.#gen;
    this.loadingMore = true;
    this.moreError = '';
    try {
      const page = await this.#backend.listConversations({ cursor: this.next, limit: chatPage });
      if (gen !== this.#gen) return;
      for (const c of page.conversations) this.put(c);
      this.#took(page.conversations, page.next);
      this.#pages++;
    } catch (e) {
      if (gen === this.#gen) this.moreError = sentence(toApiError(e));
    } finally {
      if (gen === this.#gen) this.loadingMore = false;
    }
  }

  /** The person's chats whose titles hold every word of query, the most recently changed first, asked of the server (for search). */
  async find(query: string, limit: number): Promise<Conversation[]> {
    return (await this.#backend.listConversations({ q: query, limit })).conversations;
  }

  /** The chat's loaded messages, loading them the first time. */
  detail(id: string): ChatDetail {
    let d = this.details.get(id);
    if (!d) {
      d = new ChatDetail();
      this.details.set(id, d);
      void this.load(id);
    }
    return d;
  }

  /** Loads the newest page of a chat, keeping what streamed in meanwhile. */
  async load(id: string): Promise<void> {
    const d = this.details.get(id) ?? new ChatDetail();
    if (!this.details.has(id)) this.details.set(id, d);
    try {
      const page = await this.#backend.getConversation(id);
      this.put(page.conversation);
      const have = new Map(d.messages.map((m) => [m.id, m]));
      for (const m of page.messages) have.set(m.id, m);
      d.messages = [...have.values()].sort((a, b) => a.seq - b.seq);
      for (const m of page.messages) d.streaming.delete(m.id);
      if (!d.loaded) d.more = page.more;
      d.loaded = true;
      d.error = '';
    } catch (e) {
      d.error = sentence(toApiError(e));
    }
  }

  readonly #ensuring = new Set<string>();

  /** Fetches a chat's record when it is not held (a task chat's parent, named in its banner). */
  async ensure(id: string): Promise<void> {
    if (id === '' || this.byId.has(id) || this.#ensuring.has(id)) return;
    this.#ensuring.add(id);
    try {
      this.put((await this.#backend.getConversation(id, 0, 1)).conversation);
    } catch {
      // The banner says "its chat" instead.
    } finally {
      this.#ensuring.delete(id);
    }
  }

  /** Loads the page of messages before the oldest one held. */
  async loadOlder(id: string): Promise<void> {
    const d = this.details.get(id);
    const first = d?.messages[0];
    if (!d || !first) return;
    try {
      const page = await this.#backend.getConversation(id, first.seq);
      d.messages = [...page.messages.filter((m) => !d.messages.some((x) => x.id === m.id)), ...d.messages];
      d.more = page.more;
    } catch (e) {
      d.error = sentence(toApiError(e));
    }
  }

  async create(req: CreateConversationRequest): Promise<Conversation> {
    const c = await this.#backend.createConversation(req);
    this.put(c);
    const d = new ChatDetail();
    d.loaded = true;
    this.details.set(c.id, d);
    return c;
  }

  /** Sends text; the stored user message shows at once. Rejects with an ApiError. */
  async send(id: string, text: string): Promise<void> {
    const m = await this.#backend.sendMessage(id, text);
    this.details.get(id)?.add(m);
  }

  patch(id: string, req: PatchConversationRequest): Promise<void> {
    return this.#act(id, () => this.#backend.patchConversation(id, req));
  }

  stop(id: string): Promise<void> {
    return this.#act(id, () => this.#backend.stopConversation(id));
  }

  answer(id: string, askId: string, allow: boolean): Promise<void> {
    return this.#act(id, () => this.#backend.answerAsk(id, askId, allow), (err) => (err.status === 409 ? 'Already answered.' : sentence(err)));
  }

  async #act(id: string, call: () => Promise<Conversation>, words: (e: ApiError) => string = sentence): Promise<void> {
    this.errors.delete(id);
    try {
      this.put(await call());
    } catch (e) {
      this.errors.set(id, words(toApiError(e)));
      try {
        this.put((await this.#backend.getConversation(id, 0, 1)).conversation);
      } catch {
        // The error already says what happened.
      }
    }
  }

  async loadProviders(): Promise<void> {
    try {
      this.providers = await this.#backend.listProviders();
      this.providersError = '';
    } catch (e) {
      const err = toApiError(e);
      this.providersError = err.status === 404 ? 'This Conch has no providers API yet.' : sentence(err);
    } finally {
      this.providersLoaded = true;
    }
  }

  /** Connects or changes a provider; rejects with an ApiError the form shows. */
  async putProvider(id: string, cfg: ProviderConfig): Promise<void> {
    await this.#backend.putProvider(id, cfg);
    await this.loadProviders();
  }

  async deleteProvider(id: string): Promise<void> {
    await this.#backend.deleteProvider(id);
    await this.loadProviders();
  }
}
