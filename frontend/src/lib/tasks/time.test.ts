import { describe, expect, it } from 'vitest';
import { formatDuration, formatElapsed, formatTimeLeft } from './time';

describe('elapsed', () => {
  it('formats durations', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(-5000)).toBe('0s');
    expect(formatDuration(7999)).toBe('7s');
    expect(formatDuration(65_000)).toBe('1m 05s');
    expect(formatDuration(3_599_000)).toBe('59m 59s');
    expect(formatDuration(3_600_000)).toBe('1h 00m');
    expect(formatDuration(26 * 3_600_000 + 3 * 60_000)).toBe('26h 03m');
  });

  it('counts from start to end, or to now while running', () => {
    const startedAt = '2026-11-30T06:00:00Z';
    const now = Date.parse('2026-11-30T06:01:30Z');
    expect(formatElapsed({ startedAt, endedAt: null }, now)).toBe('1m 30s');
    expect(formatElapsed({ startedAt, endedAt: '2026-11-30T06:00:04.9Z' }, now)).toBe('4s');
    expect(formatElapsed({ startedAt: null, endedAt: null }, now)).toBe('');
  });

  it('says how long is left to answer', () => {
    const now = Date.parse('2026-11-30T06:00:00Z');
    expect(formatTimeLeft('2026-11-30T06:59:12Z', now)).toBe('59m 12s left');
    expect(formatTimeLeft('2026-11-30T05:59:59Z', now)).toBe('time is up');
  });
});
