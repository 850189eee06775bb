import { EventType, NoticeKind, statuses, type AppEvent, type Conversation, type Message, type Status, type Task } from './contract';

/** The status a task had before its change, when the event says one the client knows. */
function prevOf(e: Record<string, unknown>): { prev?: Status } {
  const p = e.prev;
  return typeof p === 'string' && (statuses as readonly string[]).includes(p) ? { prev: p as Status } : {};
}

/** Reads one event message (JSON text or an already parsed value); returns null for anything it does not know. */
export function parseEvent(raw: unknown): AppEvent | null {
  let v = raw;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v) as unknown;
    } catch {
      return null;
    }
  }
  if (typeof v !== 'object' || v === null) return null;
  const e = v as Record<string, unknown>;
  if (e.type === EventType.TaskChanged) {
    const t = e.task;
    if (typeof t !== 'object' || t === null) return null;
    const r = t as Record<string, unknown>;
    if (typeof r.id !== 'string' || typeof r.rev !== 'number') return null;
    return { type: EventType.TaskChanged, task: t as Task, ...prevOf(e) };
  }
  if (e.type === EventType.TaskDeleted && typeof e.id === 'string') {
    return { type: EventType.TaskDeleted, id: e.id, ...prevOf(e) };
  }
  if (e.type === EventType.Open && typeof e.id === 'string') {
    return { type: EventType.Open, id: e.id };
  }
  if (e.type === EventType.OpenChat && typeof e.id === 'string') {
    return { type: EventType.OpenChat, id: e.id };
  }
  if (e.type === EventType.TaskNotice) {
    const t = e.task as Record<string, unknown> | null | undefined;
    const n = e.notice as Record<string, unknown> | null | undefined;
    if (typeof t !== 'object' || t === null || typeof t.id !== 'string') return null;
    if (typeof n !== 'object' || n === null || typeof n.tag !== 'string' || typeof n.title !== 'string' || typeof n.body !== 'string' || (n.kind !== NoticeKind.NoticeFinished && n.kind !== NoticeKind.NoticeQuestion)) return null;
    return { type: EventType.TaskNotice, task: t as unknown as Task, notice: { kind: n.kind, tag: n.tag, title: n.title, body: n.body } };
  }
  if (e.type === EventType.TaskOutput && typeof e.id === 'string' && typeof e.outputBytes === 'number') {
    return { type: EventType.TaskOutput, id: e.id, outputBytes: e.outputBytes };
  }
  if (e.type === EventType.HostChanged && typeof e.id === 'string') {
    return { type: EventType.HostChanged, id: e.id };
  }
  if (e.type === EventType.ProvidersChanged && typeof e.id === 'string') {
    return { type: EventType.ProvidersChanged, id: e.id };
  }
  if (e.type === EventType.Compose) {
    return { type: EventType.Compose };
  }
  if (e.type === EventType.ConversationChanged) {
    const c = e.conversation as Record<string, unknown> | null | undefined;
    if (typeof c !== 'object' || c === null || typeof c.id !== 'string' || typeof c.rev !== 'number') return null;
    return { type: EventType.ConversationChanged, conversation: c as unknown as Conversation };
  }
  if (e.type === EventType.MessageAdded) {
    const m = e.message as Record<string, unknown> | null | undefined;
    if (typeof m !== 'object' || m === null || typeof m.id !== 'string' || typeof m.conversationId !== 'string' || typeof m.seq !== 'number') return null;
    return { type: EventType.MessageAdded, message: m as unknown as Message };
  }
  if (e.type === EventType.MessageDelta) {
    const d = e.delta as Record<string, unknown> | null | undefined;
    if (typeof d !== 'object' || d === null || typeof d.conversationId !== 'string' || typeof d.messageId !== 'string' || typeof d.text !== 'string') return null;
    return { type: EventType.MessageDelta, delta: { conversationId: d.conversationId, messageId: d.messageId, text: d.text } };
  }
  return null;
}
