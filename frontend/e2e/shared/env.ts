// Where the browser run finds what it needs, and the throw-away folders it
// makes (removed when it ends).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The frontend folder. */
export const frontend = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The Conch binary under test. */
export const bin = resolve(frontend, process.env.CONCH_BIN ?? '../build/bin/conch');
/** Where screenshots go. */
export const artifacts = resolve(frontend, '../build/test-artifacts');
/** Debian's Chromium. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** How long one step may wait for the page. */
export const stepTimeout = 20_000;

const temps: string[] = [];

/** A new empty folder under the system's temp folder, removed by removeTemps. */
export function temp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** Removes every folder temp made. */
export function removeTemps(): void {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
}
