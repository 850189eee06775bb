// The ⌘K palette.

import { stepTimeout } from '../shared/env';
import { api, palette, shoot, until, visit, waitStatus } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** The ⌘K palette: pages, tasks, their actions, the background composer. */
export async function search(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('Ctrl+K opens the palette; it filters and Enter on "Tasks" goes there', async () => {
    await visit(page, 'doctor');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    const box = palette(page).getByRole('combobox');
    if (!(await box.evaluate((el) => el === document.activeElement))) throw new Error('the search box does not have the focus');
    const options = palette(page).getByRole('option');
    const all = await options.count();
    await shoot(page, 'palette');
    const firstRow = options.first();
    if ((await firstRow.getAttribute('aria-disabled')) === 'true') throw new Error(`the first row is greyed out: "${await firstRow.textContent()}"`);
    await page.keyboard.type('tas');
    await until('the list to narrow', async () => (await options.count()) < all && (await options.count()) > 0);
    const first = ((await options.first().textContent()) ?? '').trim();
    if (!first.startsWith('Tasks')) throw new Error(`the best match for "tas" is "${first}"`);
    // Letters scattered across a word are not a match; a word's start is.
    await box.fill('stngs');
    await palette(page).getByText('Nothing matches “stngs”.').waitFor({ timeout: stepTimeout });
    await box.fill('set');
    await until('"set" to find Settings first', async () => ((await options.first().textContent()) ?? '').trim().startsWith('Settings'));
    await box.fill('tas');
    await until('the list to narrow again', async () => ((await options.first().textContent()) ?? '').trim().startsWith('Tasks'));
    await shoot(page, 'palette-filtered');
    await page.keyboard.press('Enter');
    await until('the palette to close', async () => (await palette(page).count()) === 0);
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor({ state: 'visible', timeout: stepTimeout });
    if ((await page.evaluate(() => location.hash)) !== '#tasks') throw new Error(`the hash is ${await page.evaluate(() => location.hash)}`);
  });

  await check('the palette opens a task by its title, and Esc gives the focus back', async () => {
    await visit(page, 'settings');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('hello-e2e');
    await until('the task to lead the list', async () => ((await palette(page).getByRole('option').first().textContent()) ?? '').includes('echo hello-e2e'));
    await page.keyboard.press('Enter');
    await until('the card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) !== '');
    const focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-labelledby') ?? '');
    const title = await page.locator(`#${focused}`).textContent();
    if (title !== 'echo hello-e2e') throw new Error(`the focused card is "${title}"`);
    await page.getByRole('textbox', { name: 'Shell command' }).focus();
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Escape');
    await until('the palette to close', async () => (await palette(page).count()) === 0);
    const back = await page.evaluate(() => document.activeElement?.id ?? '');
    if (back !== 'composer-text') throw new Error(`focus went to "${back}", not back to the composer`);
  });

  await check('the palette offers Stop on a working task and Try again on a finished one, by click or Ctrl+Enter', async () => {
    const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'sleep 30 # palette-stop', options: { mode: 'auto' } });
    if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
    const id = made.json.id;
    await until('the task to work', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json?.status === 'running');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('palette-stop');
    const row = palette(page).getByRole('option').first();
    await until('the task to be the best match', async () => ((await row.textContent()) ?? '').includes('palette-stop'));
    await row.locator('[data-action="stop"]').waitFor({ timeout: stepTimeout });
    await shoot(page, 'palette-actions');
    await row.locator('[data-action="stop"]').click();
    await until('the task to stop', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json?.status === 'stopped');
    await until('the row to offer Try again', async () => (await row.locator('[data-action="retry"]').count()) === 1);
    await page.keyboard.press('Control+Enter');
    await until('Ctrl+Enter to run it again', async () => ['queued', 'running'].includes((await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json?.status));
    await page.keyboard.press('Escape');
    await api(origin, ctx.token, 'POST', `/api/tasks/${id}/stop`);
    await until('the task to stop again', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json?.status === 'stopped');
  });

  await check('the palette finds a word only a task printed, under "In output", and opens its task', async () => {
    const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'printf "%s\\n" "the $((6*7)) narwhals agree"', title: 'count the herd', options: { mode: 'auto' } });
    if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
    const id = made.json.id;
    await until('the task to finish', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json?.status === 'done');
    await visit(page, 'doctor');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('narwhals agree');
    const heading = palette(page).getByText('In output', { exact: true });
    await heading.waitFor({ timeout: stepTimeout });
    const hit = palette(page).locator('[role="option"].hit', { hasText: 'count the herd' }).first();
    await hit.waitFor({ timeout: stepTimeout });
    const marks = await hit.locator('mark').allTextContents();
    if (!marks.includes('narwhals') || !marks.includes('agree')) throw new Error(`the snippet marks ${JSON.stringify(marks)}`);
    await shoot(page, 'palette-full-text');
    await hit.click();
    await until('the palette to close', async () => (await palette(page).count()) === 0);
    await until('the task to be shown', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === id);
  });

  await check('"Do it in the background" in the palette waits for text, then sends it', async () => {
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    const entry = palette(page).getByRole('option', { name: /Do it in the background/ });
    if ((await entry.getAttribute('aria-disabled')) !== 'true') throw new Error('the entry is enabled with an empty composer');
    await page.keyboard.press('Escape');
    await page.getByRole('textbox', { name: 'Shell command' }).fill('echo from-palette');
    await page.getByLabel('Mode').selectOption('auto');
    await visit(page, 'doctor');
    await page.keyboard.press('Control+K');
    await page.keyboard.type('background');
    await page.keyboard.press('Enter');
    await waitStatus(page, 'echo from-palette', 'done', 'Done');
  });
}
