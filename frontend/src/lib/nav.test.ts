import { describe, expect, it } from 'vitest';
import { Page, pageOf } from './nav.svelte';

describe('pageOf', () => {
  it('reads hashes and app links', () => {
    expect(pageOf('#approvals')).toBe(Page.Approvals);
    expect(pageOf('/tasks')).toBe(Page.Tasks);
    expect(pageOf('/doctor')).toBe(Page.Doctor);
    expect(pageOf('#settings?x=1')).toBe(Page.Settings);
  });

  it('falls back to the tasks page', () => {
    expect(pageOf('')).toBe(Page.Tasks);
    expect(pageOf('#nope')).toBe(Page.Tasks);
  });
});
