import { describe, expect, it } from 'vitest';
import type { ActivityDay, ActivityRow } from '../backend/contract';
import { dayHeading, durationWords, joinDays, outcomeOf } from './activity';

function row(id: string, endedAt: string, over: Partial<ActivityRow> = {}): ActivityRow {
  return { kind: 'task', id, title: id, outcome: 'done', startedAt: endedAt, endedAt, durationMs: 0, provider: 'shell', spent: 0, ...over };
}

describe('Activity', () => {
  it('says how long something ran in its two largest units', () => {
    expect(durationWords(800)).toBe('800 ms');
    expect(durationWords(42_000)).toBe('42 s');
    expect(durationWords(125_000)).toBe('2 min 5 s');
    expect(durationWords(3_780_000)).toBe('1 h 3 min');
    expect(durationWords(7_200_000)).toBe('2 h');
  });
  it('reads outcomes in the tasks’ words, a finished reply as Replied', () => {
    expect(outcomeOf({ kind: 'task', outcome: 'failed' }).word).toBe("Didn't finish");
    expect(outcomeOf({ kind: 'turn', outcome: 'done' }).word).toBe('Replied');
    expect(outcomeOf({ kind: 'turn', outcome: 'stopped' }).word).toBe('Stopped');
  });
  it('heads days as people say them', () => {
    const now = new Date(2026, 11, 2, 15, 0);
    expect(dayHeading('2026-12-02', now)).toBe('Today');
    expect(dayHeading('2026-12-01', now)).toBe('Yesterday');
    expect(dayHeading('2026-11-30', now)).toBe('Monday 30 November');
    expect(dayHeading('2025-11-30', now)).toBe('Sunday 30 November 2025');
  });
  it('goes on with a day a page ended in, never listing a row twice', () => {
    const a: ActivityDay[] = [{ date: '2026-12-02', spent: 1, rows: [row('x', '2026-12-02T10:00:00Z')] }];
    const b: ActivityDay[] = [
      { date: '2026-12-02', spent: 1, rows: [row('x', '2026-12-02T10:00:00Z'), row('y', '2026-12-02T09:00:00Z')] },
      { date: '2026-12-01', spent: 0, rows: [row('z', '2026-12-01T09:00:00Z')] },
    ];
    const joined = joinDays(a, b);
    expect(joined.map((d) => [d.date, d.rows.map((r) => r.id)])).toEqual([
      ['2026-12-02', ['x', 'y']],
      ['2026-12-01', ['z']],
    ]);
    expect(a[0]?.rows).toHaveLength(1);
  });
});
