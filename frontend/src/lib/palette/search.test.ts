import { describe, expect, it } from 'vitest';
import type { SearchHit } from '../backend/contract';
import { hitEntryId, hitGroup, hitGroups } from './search';

function hit(kind: string, id: string, score: number): SearchHit {
  return { kind, title: id, at: '2026-12-02T09:00:00Z', score, snippet: [], ...(kind === 'chat' ? { conversation: id } : { task: id }) };
}

describe('the palette’s full-text hits', () => {
  it('group chats, then tasks, then output, keeping the server’s order in each, one row per chat', () => {
    const hits = [hit('output', 't1', 9), hit('chat', 'c1', 8), hit('task', 't1', 7), hit('chat', 'c1', 6), hit('chat', 'c2', 5)];
    expect(hitGroups(hits).map(hitEntryId)).toEqual(['hit-chat-c1', 'hit-chat-c2', 'hit-task-t1', 'hit-output-t1']);
  });
  it('name each group', () => {
    expect(hitGroup(hit('output', 't', 1))).toEqual({ kind: 'Output', heading: 'In output' });
    expect(hitGroup(hit('chat', 'c', 1)).heading).toBe('In chats');
  });
});
