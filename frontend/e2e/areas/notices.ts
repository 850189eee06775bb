// Told in the browser: the offer to turn notifications on, the page's own
// notification for a finish (none while its chat is open and visible), and
// the service worker that carries Web Push while the page is closed. Each
// runs on a page of its own, with the permission it needs.

import type { BrowserContext, Page } from 'playwright-core';
import { stepTimeout } from '../shared/env';
import { api, shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import { keepNames, type Suite } from '../shared/suite';

/** What the spy saw: each notification the page raised. */
interface Raised {
  title: string;
  tag: string;
  body: string;
}

/**
 * Wraps the browser's Notification so the page's notifications are seen
 * (headless Chromium shows none): each is recorded, then raised for real
 * when the browser can. With fakePermission the permission is the spy's
 * own, starting there; requestPermission counts its calls and grants.
 */
function spy(fakePermission: NotificationPermission | ''): void {
  const w = window as unknown as { __raised: unknown[]; __made: unknown[]; __asked: number; Notification: unknown };
  const Real = window.Notification;
  let permission = fakePermission;
  w.__raised = [];
  w.__made = [];
  w.__asked = 0;
  function Spy(title: string, options?: NotificationOptions): unknown {
    w.__raised.push({ title, tag: options?.tag ?? '', body: options?.body ?? '' });
    let n: unknown;
    try {
      n = new Real(title, options);
    } catch {
      n = { close() {}, onclick: null };
    }
    w.__made.push(n);
    return n;
  }
  Object.defineProperty(Spy, 'permission', { get: () => permission || Real.permission });
  Object.defineProperty(Spy, 'requestPermission', {
    value: async () => {
      w.__asked++;
      if (!fakePermission) return Real.requestPermission();
      permission = 'granted';
      return permission;
    },
  });
  w.Notification = Spy;
}

async function open(ctx: Suite, fakePermission: NotificationPermission | '', grant: boolean, size = { width: 1200, height: 820 }): Promise<{ context: BrowserContext; page: Page }> {
  const context = await ctx.browser.newContext({ viewport: size, colorScheme: 'light' });
  if (grant) await context.grantPermissions(['notifications'], { origin: ctx.origin });
  await context.addInitScript(keepNames);
  await context.addInitScript(spy, fakePermission);
  const page = await context.newPage();
  await page.goto(`${ctx.origin}/#token=${ctx.token}`);
  await page.getByRole('heading', { level: 1 }).first().waitFor({ timeout: stepTimeout });
  return { context, page };
}

const raised = (page: Page): Promise<Raised[]> => page.evaluate(() => (window as unknown as { __raised: Raised[] }).__raised);

async function finished(ctx: Suite, body: Record<string, unknown>): Promise<any> {
  const made = await api(ctx.origin, ctx.token, 'POST', '/api/tasks', body);
  if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
  return until(`"${body.text}" to finish, told`, async () => {
    const t = (await api(ctx.origin, ctx.token, 'GET', `/api/tasks/${made.json.id}`)).json;
    return t.status === 'done' && t.notified ? t : null;
  });
}

/** The offer, the page's notifications and the service worker. */
export async function notices(ctx: Suite): Promise<void> {
  const before = (await api(ctx.origin, ctx.token, 'GET', '/api/preferences')).json.notifications;
  await api(ctx.origin, ctx.token, 'PATCH', '/api/preferences', { notifications: { tasks: true, approvals: true } });

  await check('the page offers browser notifications in its own style; the browser asks only on Turn on, and Not now is remembered', async () => {
    for (const size of [{ width: 1440, height: 900 }, { width: 900, height: 700 }]) {
      const { context, page } = await open(ctx, 'default', false, size);
      try {
        const offer = page.getByTestId('notify-offer');
        await offer.waitFor({ timeout: stepTimeout });
        await page.mouse.move(0, 0);
        await shoot(page, `notify-offer-${size.width}`);
        if (size.width === 900) {
          await offer.getByRole('button', { name: 'Not now' }).click();
          await offer.waitFor({ state: 'detached', timeout: stepTimeout });
          await page.reload();
          await page.getByRole('heading', { level: 1 }).first().waitFor({ timeout: stepTimeout });
          await page.waitForTimeout(500);
          if ((await offer.count()) !== 0) throw new Error('the offer came back after Not now and a reload');
          // Settings can still turn them on.
          await visit(page, 'settings');
          const row = page.locator('[data-setting="browser-notifications"]');
          await row.getByText('Off in this browser.').waitFor({ timeout: stepTimeout });
          await row.getByRole('button', { name: 'Turn on' }).click();
          await row.getByText('On: this browser shows them').waitFor({ timeout: stepTimeout });
          continue;
        }
        if ((await page.evaluate(() => (window as unknown as { __asked: number }).__asked)) !== 0) throw new Error('the browser was asked for permission before the person said so');
        // Keyboard first: the offer's buttons are in the tab order.
        await offer.getByRole('button', { name: 'Turn on' }).focus();
        await page.keyboard.press('Enter');
        await offer.waitFor({ state: 'detached', timeout: stepTimeout });
        if ((await page.evaluate(() => (window as unknown as { __asked: number }).__asked)) !== 1) throw new Error('Turn on did not ask the browser once');
      } finally {
        await context.close();
      }
    }
  });

  await check('a finish while another page is shown raises one notification under its tag; none while its chat is open and visible; the service worker registers', async () => {
    const { context, page } = await open(ctx, '', true);
    try {
      if ((await page.evaluate(() => Notification.permission)) !== 'granted') throw new Error(`permission is ${await page.evaluate(() => Notification.permission)}`);
      const worker = await until('the service worker to register', () =>
        page.evaluate(async () => (await navigator.serviceWorker.getRegistration('/'))?.active?.scriptURL ?? ''),
      );
      if (new URL(worker).pathname !== '/sw.js') throw new Error(`the service worker is ${worker}`);
      if ((await page.getByTestId('notify-offer').count()) !== 0) throw new Error('the offer shows though notifications are allowed');

      await visit(page, 'settings');
      const t = await finished(ctx, { text: 'echo told-in-the-browser', options: { mode: 'auto', cwd: ctx.project } });
      await until('the notification', async () => (await raised(page)).length > 0);
      await page.waitForTimeout(800);
      const got = await raised(page);
      if (got.length !== 1 || got[0]?.tag !== `task-${t.id}` || !got[0]?.title.startsWith('echo told-in-the-browser — done')) throw new Error(`raised ${JSON.stringify(got)}`);
      // Its click brings the tab forward on the task.
      await page.evaluate(() => {
        const n = (window as unknown as { __made: { onclick: (() => void) | null }[] }).__made[0];
        n?.onclick?.();
      });
      await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor({ timeout: stepTimeout });
      // A reload tells nothing again.
      await page.reload();
      await page.getByRole('heading', { level: 1 }).first().waitFor({ timeout: stepTimeout });
      await page.waitForTimeout(800);
      if ((await raised(page)).length !== 0) throw new Error(`a reload raised ${JSON.stringify(await raised(page))}`);

      // A chat's task, while that chat is open and the page visible: quiet.
      const chat = await api(ctx.origin, ctx.token, 'POST', '/api/conversations', { provider: 'shell', mode: 'auto', cwd: ctx.chatDir });
      if (chat.status !== 201) throw new Error(`POST /api/conversations: ${chat.status} ${JSON.stringify(chat.json)}`);
      await page.evaluate((id) => (location.hash = `chat/${id}`), chat.json.id);
      await page.locator('#chat').getByRole('textbox', { name: 'Message' }).waitFor({ timeout: stepTimeout });
      if ((await page.evaluate(() => document.visibilityState)) !== 'visible') throw new Error('the page is not visible');
      await finished(ctx, { text: 'echo quiet-in-its-chat', conversationId: chat.json.id });
      await page.waitForTimeout(800);
      if ((await raised(page)).length !== 0) throw new Error(`raised while its chat was open: ${JSON.stringify(await raised(page))}`);
    } finally {
      await context.close();
    }
  });

  await api(ctx.origin, ctx.token, 'PATCH', '/api/preferences', { notifications: before });
}
