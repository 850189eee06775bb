// What the checks do with the page and the API: wait, find a card, send a
// command, screenshot, call the API, go to a page.

import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { artifacts, stepTimeout } from './env';

/** Polls f until it returns something truthy, and gives that back. */
export async function until<T>(what: string, f: () => Promise<T>, timeout = stepTimeout): Promise<T> {
  const end = Date.now() + timeout;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e instanceof Error ? e.message : e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The card titled title. */
export const card = (page: Page, title: string): Locator => page.getByRole('article', { name: title, exact: true });

/** Waits for the card titled title to show status, with word in its chip. */
export async function waitStatus(page: Page, title: string, status: string, word: string): Promise<Locator> {
  const c = card(page, title);
  await until(`"${title}" to be ${status}`, async () => (await c.getAttribute('data-status', { timeout: 1000 })) === status);
  const chip = c.locator('.chip').first();
  await until(`"${title}" chip to say "${word}"`, async () => ((await chip.textContent()) ?? '').includes(word));
  return c;
}

/** Sends a command from the composer with the keyboard shortcut. */
export async function send(page: Page, command: string, mode: string): Promise<void> {
  const box = page.getByRole('textbox', { name: 'Shell command' });
  await box.fill(command);
  await page.getByLabel('Mode').selectOption(mode);
  await page.getByRole('button', { name: /Do it in the background/ }).waitFor();
  await box.focus();
  await page.keyboard.press('Control+Shift+Enter');
  await until('the composer to clear after sending', async () => (await box.inputValue()) === '');
}

/** Screenshots the page in light and in dark. */
export async function shoot(page: Page, name: string): Promise<void> {
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(artifacts, `${name}-${colorScheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** Calls the API with the bearer token, as another client (a notification, a script) would. */
export async function api(origin: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${origin}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Not every answer has a body.
  }
  return { status: res.status, json };
}

/** Goes to one of the app's pages through the sidebar. */
export async function visit(page: Page, name: string): Promise<void> {
  await page.locator(`nav a[href="#${name}"]`).click();
  await page.getByRole('heading', { name: name.charAt(0).toUpperCase() + name.slice(1), level: 1 }).waitFor({ timeout: stepTimeout });
}

/** The ⌘K palette. */
export const palette = (page: Page): Locator => page.getByRole('dialog', { name: 'Search Conch' });
