// The chat page's pure logic: grouping chats by day and folding stored
// messages (plus the streaming reply) into what the transcript shows.

import { MessageKind, type ChatAsk, type Conversation, type LimitNotice, type Message, type ToolCall, type ToolResult } from '../backend/contract';
import { TaskFolder, type TaskItem } from './taskcards';

/** What an untitled chat is called. */
export const untitled = 'New chat';

/** The title a chat shows. */
export function chatTitle(c: Pick<Conversation, 'title'>): string {
  return c.title.trim() === '' ? untitled : c.title;
}

/** The sidebar's day groups. */
export const Day = { Today: 'Today', Yesterday: 'Yesterday', Older: 'Older' } as const;
export type Day = (typeof Day)[keyof typeof Day];

/** Chats grouped by the local day of updatedAt, newest first in each group; empty groups left out. */
export function groupByDay(list: readonly Conversation[], now: Date): { day: Day; chats: Conversation[] }[] {
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1).getTime();
  const groups: Record<Day, Conversation[]> = { [Day.Today]: [], [Day.Yesterday]: [], [Day.Older]: [] };
  const sorted = [...list].sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt));
  for (const c of sorted) {
    const t = Date.parse(c.updatedAt);
    const day = t >= midnight ? Day.Today : t >= yesterday ? Day.Yesterday : Day.Older;
    groups[day].push(c);
  }
  return ([Day.Today, Day.Yesterday, Day.Older] as const).filter((d) => groups[d].length > 0).map((d) => ({ day: d, chats: groups[d] }));
}

/** One line of the transcript. */
export type Item =
  | { kind: 'user'; key: string; text: string }
  | { kind: 'assistant'; key: string; text: string; streaming: boolean }
  | { kind: 'step'; key: string; call: ToolCall; result: ToolResult | null }
  | { kind: 'ask'; key: string; ask: ChatAsk; pending: boolean }
  | { kind: 'notice'; key: string; text: string }
  | { kind: 'limit'; key: string; limit: LimitNotice }
  | TaskItem;

/**
 * Folds messages (in seq order) into transcript items: a tool result joins
 * the step with its call id, a later ask message with an answer settles the
 * question of the same id, a task's events fold into one card where the
 * first one is (helpers of one group into one group of cards), a finished
 * task's result stays where it came, and streamed replies not stored yet
 * come last.
 * pendingAskId is conversation.ask?.id: only that question takes an answer.
 */
export function foldMessages(messages: readonly Message[], streaming: ReadonlyMap<string, string>, pendingAskId: string | null): Item[] {
  const items: Item[] = [];
  const steps = new Map<string, Extract<Item, { kind: 'step' }>>();
  const asks = new Map<string, Extract<Item, { kind: 'ask' }>>();
  const stored = new Set<string>();
  const tasks = new TaskFolder();
  for (const m of messages) {
    stored.add(m.id);
    switch (m.kind) {
      case MessageKind.User:
        items.push({ kind: 'user', key: m.id, text: m.text ?? '' });
        break;
      case MessageKind.Assistant:
        items.push({ kind: 'assistant', key: m.id, text: m.text ?? '', streaming: false });
        break;
      case MessageKind.ToolCall:
        if (m.toolCall) {
          const step = { kind: 'step' as const, key: m.id, call: m.toolCall, result: null };
          steps.set(m.toolCall.id, step);
          items.push(step);
        }
        break;
      case MessageKind.ToolResult: {
        const r = m.toolResult;
        if (!r) break;
        const step = steps.get(r.callId);
        if (step) step.result = r;
        else items.push({ kind: 'step', key: m.id, call: { id: r.callId, name: r.name, arguments: null, effect: 'none', title: r.name }, result: r });
        break;
      }
      case MessageKind.Ask: {
        const a = m.ask;
        if (!a) break;
        const seen = asks.get(a.id);
        if (seen) {
          if (a.answer) seen.ask = { ...seen.ask, answer: a.answer };
        } else {
          const item = { kind: 'ask' as const, key: m.id, ask: a, pending: false };
          asks.set(a.id, item);
          items.push(item);
        }
        break;
      }
      case MessageKind.Step: {
        // A coding agent's own step: done as soon as it is told.
        const title = m.text ?? '';
        items.push({
          kind: 'step',
          key: m.id,
          call: { id: m.id, name: 'agent', arguments: null, effect: 'none', title },
          result: { callId: m.id, name: 'agent', output: `The agent did this with its own tools: ${title}`, isError: false },
        });
        break;
      }
      case MessageKind.TaskEvent: {
        if (!m.taskEvent) {
          if ((m.text ?? '') !== '') items.push({ kind: 'notice', key: m.id, text: m.text ?? '' });
          break;
        }
        const item = tasks.add(m.id, m.createdAt, m.taskEvent);
        if (item) items.push(item);
        break;
      }
      case MessageKind.Notice:
        if (m.limit) items.push({ kind: 'limit', key: m.id, limit: m.limit });
        else items.push({ kind: 'notice', key: m.id, text: m.text ?? '' });
        break;
    }
  }
  for (const item of asks.values()) item.pending = !item.ask.answer && item.ask.id === pendingAskId;
  for (const [id, text] of streaming) {
    if (!stored.has(id)) items.push({ kind: 'assistant', key: id, text, streaming: true });
  }
  return items;
}

/** How an ask was answered, in words. */
export function answerWords(a: ChatAsk['answer']): string {
  switch (a) {
    case 'allowed':
      return 'Allowed';
    case 'declined':
      return 'Denied';
    case 'timed-out':
      return 'Timed out (denied)';
    case 'stopped':
      return 'Stopped';
    default:
      return 'Not answered';
  }
}

/** A clock time in the person's own time zone: "15:40", or "Tue 15:40" when not today. */
export function localTime(at: Date, now: Date, locale?: string): string {
  const time = at.toLocaleTimeString(locale, { hour: 'numeric', minute: '2-digit' });
  const sameDay = at.getFullYear() === now.getFullYear() && at.getMonth() === now.getMonth() && at.getDate() === now.getDate();
  if (sameDay) return time;
  const week = Math.abs(at.getTime() - now.getTime()) < 6 * 24 * 3600 * 1000;
  const day = week ? at.toLocaleDateString(locale, { weekday: 'short' }) : at.toLocaleDateString(locale, { month: 'short', day: 'numeric' });
  return `${day} ${time}`;
}

/**
 * The sentence a usage limit reads as, naming the provider once, with the
 * reset in local time when it is known: "Claude Code reached its usage
 * limit. It resets at 15:40; switch to another provider, or send again then."
 */
export function limitSentence(l: Pick<LimitNotice, 'name' | 'until'>, now: Date, locale?: string): string {
  const who = l.name.trim() !== '' ? l.name : 'This provider';
  const until = l.until ? new Date(l.until) : null;
  if (until && !Number.isNaN(until.getTime()) && until.getTime() > now.getTime()) {
    return `${who} reached its usage limit. It resets at ${localTime(until, now, locale)}; switch to another provider, or send again then.`;
  }
  if (until && !Number.isNaN(until.getTime())) return `${who} reached its usage limit; it has reset since, so you can send again.`;
  return `${who} reached its usage limit. Switch to another provider, or wait and send again.`;
}

export { formatUSD } from '../money';
