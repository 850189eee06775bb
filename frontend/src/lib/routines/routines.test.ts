import { describe, expect, it } from 'vitest';
import { RoutineKind, Status, type RoutineCard } from '../backend/contract';
import { kindWords, lastWords, nextWords, when } from './routines';

const now = new Date(2026, 11, 2, 15, 0);

function card(over: Partial<RoutineCard> = {}, paused = false): RoutineCard {
  return { routine: { paused } as RoutineCard['routine'], words: 'every weekday at 09:00', zone: 'UTC', next: null, last: null, ...over };
}

describe('a routine’s card', () => {
  it('says when the next run is, or that it is paused', () => {
    expect(nextWords(card({ next: new Date(2026, 11, 3, 9, 0).toISOString() }), now)).toMatch(/^Next run tomorrow at /);
    expect(nextWords(card({ next: new Date(2026, 11, 3, 9, 0).toISOString() }, true), now)).toBe('Paused: no new runs');
    expect(nextWords(card(), now)).toBe('No run to come');
  });
  it('names days near today in words', () => {
    expect(when(new Date(2026, 11, 2, 18, 30), now)).toMatch(/^today at /);
    expect(when(new Date(2026, 11, 1, 9, 0), now)).toMatch(/^yesterday at /);
    expect(when(new Date(2026, 11, 7, 9, 0), now)).toMatch(/^Mon 7 Dec at /);
  });
  it('says how the last run went in the tasks’ words', () => {
    expect(lastWords(card())).toBeNull();
    expect(lastWords(card({ last: { taskId: 't', conversationId: 'c', status: Status.Done, at: '' } }))?.word).toBe('Done');
    expect(kindWords(RoutineKind.RoutineCommand)).toBe('Command');
  });
});
