// The approvals inbox and the toasts.

import { stepTimeout } from '../shared/env';
import { api, palette, shoot, until, visit, waitStatus } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** The approvals inbox, its answers, and the toasts around them. */
export async function approvals(ctx: Suite): Promise<void> {
  const { page, origin, home } = ctx;
  await check('the approvals page starts empty, then lists an ask-mode task', async () => {
    await visit(page, 'approvals');
    await page.getByText('Nothing is waiting for your OK.').waitFor({ timeout: stepTimeout });
    await shoot(page, 'approvals-empty');
    const created = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo inbox', options: { provider: 'shell', mode: 'ask', cwd: home } });
    if (created.status !== 201) throw new Error(`creating the task answered ${created.status}`);
    ctx.inboxId = created.json.id;
    const item = page.locator(`[data-approval][data-task-id="${ctx.inboxId}"]`);
    await item.waitFor({ timeout: stepTimeout });
    const text = (await item.textContent()) ?? '';
    if (!text.includes('echo inbox')) throw new Error(`the item does not name the command: ${text}`);
    if (!text.includes('a command in ~/.conch')) throw new Error(`the item does not name the folder as ~/.conch: ${text}`);
    await until('the time left to show', async () => /\d+m \d\ds left/.test((await item.locator('[aria-label="Time left"]').textContent()) ?? ''));
    await until('the sidebar to count it (amber)', async () => ((await page.getByTestId('approvals-badge').textContent()) ?? '').includes('1'));
    const listed = await api(origin, ctx.token, 'GET', '/api/approvals');
    const mine = listed.json.approvals.find((a: any) => a.taskId === ctx.inboxId);
    if (!mine) throw new Error('GET /api/approvals does not list the task');
    ctx.inboxAsk = mine.ask.id;
    await page.mouse.move(0, 0);
    await shoot(page, 'approvals');
    await page.setViewportSize({ width: 420, height: 760 });
    await shoot(page, 'approvals-narrow');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await shoot(page, 'palette-narrow');
    await page.keyboard.press('Escape');
    await page.setViewportSize({ width: 1200, height: 820 });
  });

  await check('Allow answers it, it leaves the list and a toast says it finished', async () => {
    const item = page.locator(`[data-approval][data-task-id="${ctx.inboxId}"]`);
    await item.getByRole('button', { name: 'Allow' }).click();
    await until('the item to leave the list', async () => (await item.count()) === 0);
    await page.getByText('Nothing is waiting for your OK.').waitFor({ timeout: stepTimeout });
    const toast = page.locator(`.toast[data-task-id="${ctx.inboxId}"]`);
    await toast.waitFor({ timeout: stepTimeout });
    const text = (await toast.textContent()) ?? '';
    if (!text.includes('echo inbox — done')) throw new Error(`the toast says "${text}"`);
    if ((await page.getByRole('region', { name: 'Notifications' }).locator('[aria-live="polite"]').count()) !== 1) throw new Error('the toasts are not in a polite live region');
    await toast.hover();
    await shoot(page, 'toast');
    await page.waitForTimeout(6500);
    if ((await toast.count()) === 0) throw new Error('the toast went while hovered');
    await page.mouse.move(0, 0);
    await until('the toast to go by itself', async () => (await toast.count()) === 0, 9000);
  });

  await check('a second answer through the API is a 409 and the page stays sane', async () => {
    const again = await api(origin, ctx.token, 'POST', `/api/tasks/${ctx.inboxId}/answer`, { askId: ctx.inboxAsk, allow: true });
    if (again.status !== 409) throw new Error(`the second answer got ${again.status}`);
    await page.waitForTimeout(500);
    await page.getByText('Nothing is waiting for your OK.').waitFor({ timeout: stepTimeout });
    if ((await page.getByRole('alert').count()) !== 0) throw new Error(`an alert shows: ${await page.getByRole('alert').first().textContent()}`);
  });

  await check('an answer that lost the race to another client says "Already answered" calmly', async () => {
    const created = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo race', options: { provider: 'shell', mode: 'ask' } });
    const id = created.json.id;
    const item = page.locator(`[data-approval][data-task-id="${id}"]`);
    await item.waitFor({ timeout: stepTimeout });
    // Another client (the notification's Deny) answers first; the page's own answer then gets the server's 409.
    await page.route(`**/api/tasks/${id}/answer`, async (route) => {
      const task = (await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json;
      const first = await api(origin, ctx.token, 'POST', `/api/tasks/${id}/answer`, { askId: task.ask.id, allow: false });
      if (first.status !== 200) throw new Error(`the first answer got ${first.status}`);
      const second = await api(origin, ctx.token, 'POST', `/api/tasks/${id}/answer`, { askId: task.ask.id, allow: true });
      await route.fulfill({ status: second.status, contentType: 'application/json', body: JSON.stringify(second.json) });
    });
    try {
      await item.getByRole('button', { name: 'Allow' }).click();
      await page.getByRole('status').filter({ hasText: 'Already answered: echo race' }).waitFor({ timeout: stepTimeout });
      await until('the item to leave the list', async () => (await item.count()) === 0);
      if ((await page.getByRole('alert').count()) !== 0) throw new Error(`an alert shows: ${await page.getByRole('alert').first().textContent()}`);
    } finally {
      await page.unroute(`**/api/tasks/${id}/answer`);
    }
  });

  await check('Open on a toast shows the task; no toast while the tasks page is looked at', async () => {
    await visit(page, 'doctor');
    const created = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo toast-open', options: { provider: 'shell', mode: 'auto' } });
    const toast = page.locator(`.toast[data-task-id="${created.json.id}"]`);
    await toast.waitFor({ timeout: stepTimeout });
    await toast.getByRole('button', { name: 'Open' }).click();
    await until('the card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === created.json.id);
    if (!(await page.evaluate(() => document.hasFocus()))) throw new Error('the test page has no focus, so this cannot be checked');
    const quiet = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo quiet', options: { provider: 'shell', mode: 'auto' } });
    await waitStatus(page, 'echo quiet', 'done', 'Done');
    await page.waitForTimeout(600);
    if ((await page.locator(`.toast[data-task-id="${quiet.json.id}"]`).count()) !== 0) throw new Error('a toast showed while the tasks page was in view');
  });

  await check('a new question raises a toast away from the tasks and approvals pages', async () => {
    await visit(page, 'settings');
    const created = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo toast-ask', options: { provider: 'shell', mode: 'ask' } });
    const toast = page.locator(`.toast[data-task-id="${created.json.id}"]`);
    await toast.waitFor({ timeout: stepTimeout });
    if (!((await toast.textContent()) ?? '').includes('needs your OK')) throw new Error(`the toast says "${await toast.textContent()}"`);
    await toast.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor({ timeout: stepTimeout });
    const item = page.locator(`[data-approval][data-task-id="${created.json.id}"]`);
    await item.getByRole('button', { name: 'Deny' }).click();
    await until('the item to leave the list', async () => (await item.count()) === 0);
  });
}
