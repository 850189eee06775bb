// The Activity page.

import { stepTimeout } from '../shared/env';
import { api, shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** Activity: what ran, day by day. */
export async function activity(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('Activity lists what ran today with its outcome, narrows by outcome, and a row opens what ran', async () => {
    const failed = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'exit 4', title: 'a command that fails for Activity', options: { mode: 'auto' } });
    if (failed.status !== 201) throw new Error(`POST /api/tasks: ${failed.status}`);
    const passed = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'true', title: 'a command that passes for Activity', options: { mode: 'auto' } });
    if (passed.status !== 201) throw new Error(`POST /api/tasks: ${passed.status}`);
    await until('it to fail', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${failed.json.id}`)).json?.status === 'failed');
    await until('the other to pass', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${passed.json.id}`)).json?.status === 'done');
    await visit(page, 'activity');
    const today = page.locator('#activity section.day').first();
    await today.getByRole('heading', { name: 'Today', level: 2 }).waitFor({ timeout: stepTimeout });
    const row = today.locator('button.row', { hasText: 'a command that fails for Activity' });
    await row.waitFor({ timeout: stepTimeout });
    if ((await row.getAttribute('data-outcome')) !== 'failed') throw new Error(`the row's outcome is ${await row.getAttribute('data-outcome')}`);
    if (!((await row.textContent()) ?? '').includes("Didn't finish")) throw new Error(`the row reads "${await row.textContent()}"`);
    const all = await page.locator('#activity button.row').count();
    await shoot(page, 'activity');
    await page.locator('#activity').getByLabel('Outcome').selectOption('failed');
    await until('the list to narrow to what failed', async () => {
      const outcomes = await page.locator('#activity button.row').evaluateAll((els) => els.map((e) => e.getAttribute('data-outcome')));
      return outcomes.length > 0 && outcomes.length < all && outcomes.every((o) => o === 'failed');
    });
    await page.locator('#activity button.row', { hasText: 'a command that fails for Activity' }).focus();
    await page.keyboard.press('Enter');
    await until('its task to be shown', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === failed.json.id);
    await visit(page, 'activity');
    await page.locator('#activity').getByLabel('Outcome').selectOption('');
  });
}
