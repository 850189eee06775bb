// The run's results: each named check passes or fails (with a screenshot of
// the page as it failed), and the last line says "N passed, M failed".

import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { artifacts } from './env';

/** How one check went. */
export interface Result {
  name: string;
  ok: boolean;
  why?: string;
}

/** Every check run so far, in order. */
export const results: Result[] = [];

/** The page a failing check's screenshot is taken of. */
export const shown: { page: Page | undefined } = { page: undefined };

/** Runs one named check and records how it went. */
export async function check(name: string, f: () => Promise<void>): Promise<void> {
  try {
    await f();
    results.push({ name, ok: true });
    console.log(`ok    ${name}`);
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n').slice(0, 6).join('\n      ') : String(e);
    results.push({ name, ok: false, why });
    console.log(`FAIL  ${name}\n      ${why}`);
    const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
    await shown.page?.screenshot({ path: join(artifacts, `fail-${slug}.png`) }).catch(() => {});
  }
}

/** How many passed and failed; a failed set-up (fatal) counts as one more failure. */
export function tally(fatal: string): { passed: number; failed: number } {
  const passed = results.filter((r) => r.ok).length;
  return { passed, failed: results.length - passed + (fatal ? 1 : 0) };
}
