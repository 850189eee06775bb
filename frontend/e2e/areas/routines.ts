// The Routines page.

import { stepTimeout } from '../shared/env';
import { shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** Routines: made from the page, run now, paused, deleted. */
export async function routines(ctx: Suite): Promise<void> {
  const { page } = ctx;
  await check('a routine is made from the page (a schedule it cannot read says so), runs now, pauses and is deleted', async () => {
    await visit(page, 'routines');
    await page.locator('#routines').getByRole('button', { name: 'New routine' }).click();
    const form = page.getByRole('form', { name: 'New routine' });
    await form.getByLabel('A command').check();
    await form.getByRole('textbox', { name: 'Command' }).fill('echo from-a-routine');
    await form.getByRole('textbox', { name: /^When/ }).fill('whenever it suits');
    await form.getByLabel('Mode').selectOption('auto');
    await form.getByRole('button', { name: 'Make routine' }).click();
    await form.getByRole('alert').waitFor({ timeout: stepTimeout });
    if (!((await form.getByRole('alert').textContent()) ?? '').includes('every')) throw new Error(`the error says "${await form.getByRole('alert').textContent()}"`);
    await form.getByRole('textbox', { name: /^When/ }).fill('every weekday at 9:00');
    await form.getByLabel('Name').fill('Say hello on weekdays');
    await form.getByRole('button', { name: 'Make routine' }).click();
    const card = page.locator('#routines li.card', { hasText: 'Say hello on weekdays' });
    await card.waitFor({ timeout: stepTimeout });
    const cron = (await card.locator('code.cron').textContent()) ?? '';
    if (cron.trim() !== '0 9 * * 1-5') throw new Error(`its cron form is "${cron}"`);
    if (!((await card.getByTestId('next-run').textContent()) ?? '').startsWith('Next run')) throw new Error('the card does not say when it runs next');
    await card.getByRole('button', { name: 'Run now' }).click();
    await until('its run to be done', async () => (await card.locator('.chip.tone-green').count()) === 1, 30_000);
    await shoot(page, 'routines');
    await card.getByRole('button', { name: 'Pause' }).click();
    await until('it to say it is paused', async () => ((await card.getByTestId('next-run').textContent()) ?? '').startsWith('Paused'));
    await card.getByRole('button', { name: 'Resume' }).click();
    await until('it to run again on its schedule', async () => ((await card.getByTestId('next-run').textContent()) ?? '').startsWith('Next run'));
    await card.getByRole('button', { name: 'Open its chat' }).click();
    await page.locator('#chat').waitFor({ timeout: stepTimeout });
    // Its run shows in Activity as a routine's, and narrows Activity to its chat.
    await visit(page, 'activity');
    const run = page.locator('#activity li.line', { has: page.locator('button.row[data-kind="routine"]', { hasText: 'Say hello on weekdays' }) }).first();
    await run.waitFor({ timeout: stepTimeout });
    await run.hover();
    await run.locator('button.only').click();
    await page.getByTestId('chat-filter').waitFor({ timeout: stepTimeout });
    await until('only its chat to show', async () => {
      const titles = await page.locator('#activity button.row .title').allTextContents();
      return titles.length > 0 && titles.every((t) => t === 'Say hello on weekdays');
    });
    await page.getByRole('button', { name: 'Show every chat' }).click();
    await until('every chat to show again', async () => (await page.getByTestId('chat-filter').count()) === 0);
    await visit(page, 'routines');
    const again = page.locator('#routines li.card', { hasText: 'Say hello on weekdays' });
    await again.getByRole('button', { name: 'Delete' }).click();
    await again.getByRole('button', { name: 'Delete? Press again' }).click();
    await until('the card to go', async () => (await page.locator('#routines li.card', { hasText: 'Say hello on weekdays' }).count()) === 0);
  });
}
