// The doctor and the settings pages.

import { readFileSync } from 'node:fs';
import { needsProviders } from '../shared/chat';
import { stepTimeout } from '../shared/env';
import { api, shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** The doctor page. */
export async function doctor(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('the doctor page shows each check, links to Tasks and checks again', async () => {
    await visit(page, 'doctor');
    const tasksCheck = page.locator('[data-check="tasks"]');
    await tasksCheck.waitFor({ timeout: stepTimeout });
    const report = await api(origin, ctx.token, 'GET', '/api/doctor');
    const shown = await page.locator('[data-check]').count();
    if (shown !== report.json.checks.length) throw new Error(`${shown} checks shown, the API has ${report.json.checks.length}`);
    const problems = report.json.checks.filter((c: any) => c.level === 'warn' || c.level === 'fail').length;
    const marked = (await page.getByTestId('doctor-mark').count()) > 0;
    if (marked !== problems > 0) throw new Error(`the (!) marker is ${marked ? 'shown' : 'missing'} with ${problems} problems`);
    await page.getByRole('button', { name: 'Check again' }).click();
    await until('the check to finish', async () => !(await page.getByRole('button', { name: 'Check again' }).isDisabled()));
    await page.mouse.move(0, 0);
    await shoot(page, 'doctor');
    await tasksCheck.getByRole('link', { name: 'Open Tasks' }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor({ state: 'visible', timeout: stepTimeout });
  });
}

/** Settings that persist, and a limit that is refused. */
export async function preferences(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('settings: a switch persists across a reload, a bad limit says why', async () => {
    await visit(page, 'settings');
    const sw = page.getByRole('switch', { name: 'When a background task finishes' });
    await sw.waitFor({ timeout: stepTimeout });
    if ((await sw.getAttribute('aria-checked')) !== 'true') throw new Error('the topic starts off');
    await sw.focus();
    await page.keyboard.press('Space');
    await until('the switch to turn off', async () => (await sw.getAttribute('aria-checked')) === 'false');
    await until('the server to have it', async () => (await api(origin, ctx.token, 'GET', '/api/preferences')).json.notifications.tasks === false);
    await page.reload();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor({ timeout: stepTimeout });
    await until('the switch to load off', async () => (await sw.getAttribute('aria-checked', { timeout: 1000 })) === 'false');
    const limit = page.getByLabel('Background tasks at once');
    await limit.fill('0');
    await limit.press('Enter');
    await page.getByText('Use a number from 1 to 64.').waitFor({ timeout: stepTimeout });
    await page.mouse.move(0, 0);
    await shoot(page, 'settings');
    await limit.fill('2');
    await limit.press('Enter');
    await until('the server to have limit 2', async () => (await api(origin, ctx.token, 'GET', '/api/preferences')).json.limits.background === 2);
    if ((await page.getByText('Use a number from 1 to 64.').count()) !== 0) throw new Error('the error stayed after a good value');
    await limit.fill('3');
    await limit.press('Enter');
    await sw.click();
    await until('the switch and limit to be back', async () => {
      const p = (await api(origin, ctx.token, 'GET', '/api/preferences')).json;
      return p.notifications.tasks === true && p.limits.background === 3;
    });
  });
}

/** The fallback provider, backups and retention. */
export async function laterSettings(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('settings: the provider that carries on at a limit is picked, saved and still picked after a reload', async () => {
    needsProviders(ctx);
    await visit(page, 'settings');
    const select = page.getByLabel('When a provider reaches its limit');
    await until('the connected provider offered', async () => (await select.locator('option[value="e2e-model"]').count()) === 1);
    if ((await select.inputValue()) !== '') throw new Error(`the fallback starts as "${await select.inputValue()}"`);
    await select.selectOption('e2e-model');
    await page.locator('[data-setting="limitFallback"]').getByText('Saved').waitFor({ timeout: stepTimeout });
    await page.reload();
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor({ timeout: stepTimeout });
    await until('the fallback still picked after a reload', async () => (await page.getByLabel('When a provider reaches its limit').inputValue()) === 'e2e-model');
    const prefs = await api(origin, ctx.token, 'GET', '/api/preferences');
    if (prefs.json?.limitFallback !== 'e2e-model') throw new Error(`GET /api/preferences says limitFallback ${JSON.stringify(prefs.json?.limitFallback)}`);
    await page.getByRole('heading', { name: 'Usage limits' }).scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'settings-fallback');
  });

  await check('settings: Backup downloads a live snapshot of the store, or a tar with the logs; retention is saved', async () => {
    await visit(page, 'settings');
    const button = page.getByRole('button', { name: 'Download backup' });
    await button.scrollIntoViewIfNeeded();
    const logs = page.getByRole('switch', { name: 'Include output logs' });
    for (const withLogs of [false, true]) {
      if ((await logs.getAttribute('aria-checked')) !== String(withLogs)) await logs.click();
      const [download] = await Promise.all([page.waitForEvent('download', { timeout: stepTimeout }), button.click()]);
      const name = download.suggestedFilename();
      const bytes = readFileSync(await download.path());
      // bbolt's magic sits after the first page's 16-byte header; a tar says ustar at 257.
      const bbolt = bytes.length > 20 && bytes.readUInt32LE(16) === 0xed0cdaed;
      const tar = bytes.length > 262 && bytes.subarray(257, 262).toString('latin1') === 'ustar';
      if (withLogs ? !tar || !/^conch-backup-\d{8}-\d{6}\.tar$/.test(name) || !bytes.includes('output.log') : !bbolt || !/^conch-backup-\d{8}-\d{6}\.db$/.test(name)) {
        throw new Error(`the ${withLogs ? 'tar' : 'snapshot'} download is ${name}, ${bytes.length} bytes starting ${bytes.subarray(0, 24).toString('hex')}`);
      }
      await page.getByText(`Downloaded ${name}`).waitFor({ timeout: stepTimeout });
    }
    const keep = page.getByLabel('Keep finished tasks for (days)');
    await keep.fill('30');
    await keep.press('Enter');
    await until('the server to keep finished tasks 30 days', async () => (await api(origin, ctx.token, 'GET', '/api/preferences')).json.retentionDays === 30);
    // The person types on while a save is on its way: the answer to the first must not
    // overwrite what they typed since, and the saves land in the order they were made.
    let release = () => {};
    const held = new Promise((resolve) => (release = () => resolve(undefined)));
    await page.route('**/api/preferences', async (route) => {
      if (route.request().method() === 'PATCH' && JSON.parse(route.request().postData() ?? '{}').retentionDays === 45) await held;
      await route.continue();
    });
    const state = page.locator('[data-setting="retentionDays"] .saved');
    try {
      await keep.fill('45');
      await keep.press('Enter');
      await until('the save on its way', async () => (await state.textContent()) === 'Saving…');
      await keep.fill('90');
      release();
      await until('the first save answered', async () => (await state.textContent()) === 'Saved');
      if ((await api(origin, ctx.token, 'GET', '/api/preferences')).json.retentionDays !== 45) throw new Error('the held save did not land');
      if ((await keep.inputValue()) !== '90') throw new Error(`the answer overwrote what was typed since: the field shows ${await keep.inputValue()}`);
      await keep.press('Enter');
      await until('the retention back at 90', async () => (await api(origin, ctx.token, 'GET', '/api/preferences')).json.retentionDays === 90);
    } finally {
      release();
      await page.unroute('**/api/preferences');
    }
    await button.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'settings-backup');
    await logs.click();
  });
}
