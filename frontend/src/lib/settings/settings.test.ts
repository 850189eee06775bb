import { describe, expect, it } from 'vitest';
import type { Preferences } from '../backend/contract';
import { fallbackChoices, parseBudget, parseLimit, parseRetention, sizeText, withBudget, withLimit, withLimitFallback, withRetention, withTopic } from './settings';

describe('parseLimit', () => {
  it('takes whole numbers from 1 to 64', () => {
    expect(parseLimit('1')).toEqual({ value: 1 });
    expect(parseLimit(' 64 ')).toEqual({ value: 64 });
    expect(parseLimit('03')).toEqual({ value: 3 });
  });

  it('says what is wrong in one sentence', () => {
    expect(parseLimit('')).toEqual({ error: 'Enter a number from 1 to 64.' });
    expect(parseLimit('0')).toEqual({ error: 'Use a number from 1 to 64.' });
    expect(parseLimit('65')).toEqual({ error: 'Use a number from 1 to 64.' });
    expect(parseLimit('2.5')).toEqual({ error: 'Use a whole number from 1 to 64.' });
    expect(parseLimit('-1')).toEqual({ error: 'Use a whole number from 1 to 64.' });
    expect(parseLimit('three')).toEqual({ error: 'Use a whole number from 1 to 64.' });
  });
});

describe('withLimit / withTopic', () => {
  const p: Preferences = { limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 };

  it('changes one field and leaves the original alone', () => {
    expect(withLimit(p, 'helper', 8)).toEqual({ limits: { background: 3, helper: 8 }, notifications: { tasks: true, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 });
    expect(withTopic(p, 'tasks', false)).toEqual({ limits: { background: 3, helper: 4 }, notifications: { tasks: false, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 });
    expect(p).toEqual({ limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 });
  });
});

describe('monthly budget', () => {
  it('reads dollars, with 0 or nothing for no cap', () => {
    expect(parseBudget('20')).toEqual({ value: 20 });
    expect(parseBudget(' $12.50 ')).toEqual({ value: 12.5 });
    expect(parseBudget('')).toEqual({ value: 0 });
    expect(parseBudget('0')).toEqual({ value: 0 });
  });
  it('refuses what is not an amount', () => {
    for (const bad of ['-1', 'ten', '1.234', '1e3']) expect(parseBudget(bad)).toHaveProperty('error');
    expect(parseBudget('2000000')).toHaveProperty('error');
  });
  it('changes only the budget', () => {
    const p = { limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: false }, budget: { monthly: 0, jobCap: 0 }, prices: { x: { input: 1, output: 2 } }, limitFallback: 'codex', retentionDays: 90 };
    const next = withBudget(p, 20);
    expect(next.budget?.monthly).toBe(20);
    expect(next.limits).toEqual(p.limits);
    expect(next.prices).toEqual(p.prices);
    expect(p.budget?.monthly).toBe(0);
    const capped = withBudget(next, 2.5, 'jobCap');
    expect(capped.budget).toEqual({ monthly: 20, jobCap: 2.5 });
    expect(next.budget?.jobCap).toBe(0);
  });

  it('offers no fallback first, then the connected providers', () => {
    const providers = [
      { id: 'anthropic', name: 'Anthropic', ready: true, canAsk: true },
      { id: 'codex', name: 'Codex CLI', ready: false, canAsk: true },
      { id: 'plain', name: '', ready: true, canAsk: true },
      { id: 'mute', name: 'Mute', ready: true, canAsk: false },
      { id: 'shell', name: 'Shell', ready: true, canAsk: true },
    ];
    expect(fallbackChoices(providers, '')).toEqual([
      { id: '', label: 'Fail the task (no fallback)' },
      { id: 'anthropic', label: 'Anthropic' },
      { id: 'plain', label: 'plain' },
    ]);
  });
  it('keeps offering the saved fallback when it is not connected now', () => {
    const providers = [{ id: 'codex', name: 'Codex CLI', ready: false, canAsk: true }];
    expect(fallbackChoices(providers, 'codex').at(-1)).toEqual({ id: 'codex', label: 'Codex CLI (not ready)' });
    expect(fallbackChoices([], 'gone').at(-1)).toEqual({ id: 'gone', label: 'gone (not connected)' });
    expect(fallbackChoices([{ id: 'gone', name: 'Gone', ready: true, canAsk: true }], 'gone')).toHaveLength(2);
  });
  it('changes only the limit fallback', () => {
    const p: Preferences = { limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: true }, budget: { monthly: 5, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 };
    const next = withLimitFallback(p, 'anthropic');
    expect(next).toEqual({ ...p, limitFallback: 'anthropic' });
    expect(p.limitFallback).toBe('');
    expect(withLimitFallback(next, '').limitFallback).toBe('');
  });
});

describe('parseRetention / withRetention', () => {
  it('takes whole days from 0 (forever) to 36,500', () => {
    expect(parseRetention('0')).toEqual({ value: 0 });
    expect(parseRetention(' 90 ')).toEqual({ value: 90 });
    expect(parseRetention('36500')).toEqual({ value: 36500 });
  });

  it('says what is wrong in one sentence', () => {
    expect(parseRetention('')).toEqual({ error: 'Enter a number of days from 0 (forever) to 36,500.' });
    expect(parseRetention('36501')).toEqual({ error: 'Use a number of days from 0 (forever) to 36,500.' });
    expect(parseRetention('-1')).toEqual({ error: 'Use a whole number of days from 0 (forever) to 36,500.' });
    expect(parseRetention('1.5')).toEqual({ error: 'Use a whole number of days from 0 (forever) to 36,500.' });
  });

  it('changes the retention alone, leaving p as it was', () => {
    const p: Preferences = { limits: { background: 3, helper: 4 }, notifications: { tasks: true, approvals: true }, budget: { monthly: 0, jobCap: 0 }, prices: {}, limitFallback: '', retentionDays: 90 };
    expect(withRetention(p, 0)).toEqual({ ...p, retentionDays: 0 });
    expect(p.retentionDays).toBe(90);
  });
});

describe('sizeText', () => {
  it('reads as a person would say it', () => {
    expect(sizeText(1)).toBe('1 byte');
    expect(sizeText(812)).toBe('812 bytes');
    expect(sizeText(14 * 1024 + 100)).toBe('14 KB');
    expect(sizeText(3.25 * 1024 * 1024)).toBe('3.3 MB');
    expect(sizeText(2 * 1024 ** 3)).toBe('2.0 GB');
  });
});

