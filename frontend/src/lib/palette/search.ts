// The palette's full-text hits: every chat, task and output the server's
// index found, grouped by kind under a heading, best first within each.

import type { SearchHit } from '../backend/contract';

/** The groups in the order the palette shows them. */
const groups = [
  { hit: 'chat', kind: 'Chat', heading: 'In chats' },
  { hit: 'task', kind: 'Task', heading: 'In tasks' },
  { hit: 'output', kind: 'Output', heading: 'In output' },
] as const;

/** The palette's kind word and heading for a hit. */
export function hitGroup(h: SearchHit): { kind: string; heading: string } {
  const g = groups.find((g) => g.hit === h.kind) ?? groups[1];
  return { kind: g.kind, heading: g.heading };
}

/** The hits grouped by kind (chats, tasks, output), each group in the server's order; one per chat. */
export function hitGroups(hits: SearchHit[]): SearchHit[] {
  const seen = new Set<string>();
  const once = hits.filter((h) => {
    const key = h.kind === 'chat' ? `chat:${h.conversation}` : `${h.kind}:${h.task}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return groups.flatMap((g) => once.filter((h) => h.kind === g.hit));
}

/** A hit's row id, told apart from the rows the names matched. */
export function hitEntryId(h: SearchHit): string {
  return h.kind === 'chat' ? `hit-chat-${h.conversation}` : `hit-${h.kind}-${h.task}`;
}
