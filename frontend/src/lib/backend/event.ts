import { EventType, type Task, type TaskEvent } from './contract';

/** Reads one event message (JSON text or an already parsed value); returns null for anything it does not know. */
export function parseEvent(raw: unknown): TaskEvent | null {
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
    return { type: EventType.TaskChanged, task: t as Task };
  }
  if (e.type === EventType.TaskDeleted && typeof e.id === 'string') {
    return { type: EventType.TaskDeleted, id: e.id };
  }
  if (e.type === EventType.AppOpen && typeof e.id === 'string') {
    return { type: EventType.AppOpen, id: e.id };
  }
  if (e.type === EventType.AppCompose) {
    return { type: EventType.AppCompose };
  }
  return null;
}
