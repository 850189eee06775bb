import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Backend } from '../backend/backend';
import { Level, type DoctorCheck, type DoctorReport } from '../backend/contract';
import { ApiError } from '../backend/error';
import { DoctorStore, attentionLabel, doctorEveryMs, needsAttention } from './doctor.svelte';

const check = (id: string, level: Level): DoctorCheck => ({ id, title: id, level, summary: '', details: null });
const report = (...levels: Level[]): DoctorReport => ({ ok: !levels.includes(Level.Fail), checks: levels.map((l, i) => check(`c${i}`, l)) });

describe('needsAttention', () => {
  it('marks warn and fail, not ok and info', () => {
    expect(needsAttention(null)).toBe(false);
    expect(needsAttention(report(Level.OK, Level.Info))).toBe(false);
    expect(needsAttention(report(Level.OK, Level.Warn))).toBe(true);
    expect(needsAttention(report(Level.Fail))).toBe(true);
  });

  it('says how many checks need a look', () => {
    expect(attentionLabel(report(Level.Warn, Level.OK))).toBe('1 check needs a look');
    expect(attentionLabel(report(Level.Warn, Level.Fail))).toBe('2 checks need a look');
  });
});

describe('DoctorStore', () => {
  afterEach(() => vi.useRealTimers());

  it('checks at start and every minute, and says what went wrong', async () => {
    vi.useFakeTimers();
    const doctor = vi.fn(async () => report(Level.OK));
    const s = new DoctorStore({ doctor } as unknown as Backend);
    const stop = s.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(doctor).toHaveBeenCalledTimes(1);
    expect(s.report?.checks).toHaveLength(1);
    doctor.mockRejectedValueOnce(new ApiError('network', "can't reach Conch"));
    await vi.advanceTimersByTimeAsync(doctorEveryMs);
    expect(doctor).toHaveBeenCalledTimes(2);
    expect(s.error).toBe("Can't reach Conch.");
    expect(s.report).not.toBeNull(); // the last report stays
    stop();
    await vi.advanceTimersByTimeAsync(doctorEveryMs * 2);
    expect(doctor).toHaveBeenCalledTimes(2);
  });

  it('joins a check already in flight', async () => {
    const doctor = vi.fn(async () => report(Level.Warn));
    const s = new DoctorStore({ doctor } as unknown as Backend);
    await Promise.all([s.refresh(), s.refresh()]);
    expect(doctor).toHaveBeenCalledTimes(1);
    expect(needsAttention(s.report)).toBe(true);
  });
});
