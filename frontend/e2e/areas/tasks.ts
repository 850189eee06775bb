// The tasks page: shell commands from the composer, their cards and actions, and its pages of finished tasks.

import type { WebSocketRoute } from 'playwright-core';
import { stepTimeout } from '../shared/env';
import { api, card, palette, send, shoot, until, visit, waitStatus } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** Shell commands from the composer: run, fail, stop, ask, retry, delete, refuse. */
export async function commands(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('runs `echo hello-e2e` (auto) to Done with its output', async () => {
    await send(page, 'echo hello-e2e', 'auto');
    const c = await waitStatus(page, 'echo hello-e2e', 'done', 'Done');
    await until('"hello-e2e" in the output', async () => ((await c.locator('pre').textContent()) ?? '').includes('hello-e2e'));
  });

  await check('a failing command says it did not finish and why', async () => {
    await send(page, 'echo oops >&2; exit 2', 'auto');
    const c = await waitStatus(page, 'echo oops >&2; exit 2', 'failed', "Didn't finish");
    await until('the reason on the card, in words', async () => ((await c.textContent()) ?? '').includes('It failed with exit code 2.'));
    if (((await c.textContent()) ?? '').includes('exited with code')) throw new Error('the card shows the raw "exited with code"');
  });

  await check('shows `sleep 30` Working, then Stop makes it Stopped', async () => {
    await send(page, 'sleep 30', 'auto');
    const c = await waitStatus(page, 'sleep 30', 'running', 'Working');
    await until('elapsed to tick', async () => /^\d+s$/.test(((await c.locator('.elapsed').textContent()) ?? '').trim()));
    // While it works and nothing else changes, the page keeps still
    // between the clock's ticks: the chip's pulse is the compositor's to
    // animate, so nothing is styled (and painted) again at every frame.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    const styled = async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'RecalcStyleCount')?.value ?? 0;
    await page.mouse.move(1, 1);
    await page.waitForTimeout(300);
    const before = await styled();
    await page.waitForTimeout(2000);
    const restyled = (await styled()) - before;
    await cdp.detach();
    if (restyled > 20) throw new Error(`the page was styled again ${restyled} times in 2 s while one task worked`);
    await c.getByRole('button', { name: 'Stop' }).click();
    await waitStatus(page, 'sleep 30', 'stopped', 'Stopped');
  });

  await check('asks before `echo asked` (ask) and runs it once allowed', async () => {
    await send(page, 'echo asked', 'ask');
    const c = await waitStatus(page, 'echo asked', 'needs-you', 'Needs your OK');
    const ask = c.getByRole('region', { name: 'Question' });
    await until('the question to name the command', async () => ((await ask.textContent()) ?? '').includes('echo asked'));
    if ((await ask.getAttribute('data-danger')) !== 'false' || (await ask.locator('[data-danger-warning]').count()) !== 0) throw new Error('a harmless echo is asked with a destructive warning');
    await until('the sidebar badge to count it', async () => ((await page.locator('nav a[href="#tasks"] .badge').textContent()) ?? '').includes('1'));
    // A second command keeps running while the first waits, for the screenshots.
    await send(page, 'for i in $(seq 20); do echo "step $i"; sleep 1; done', 'auto');
    await waitStatus(page, 'for i in $(seq 20); do echo "step $i"; sleep 1; done', 'running', 'Working');
    await page.waitForTimeout(1500);
    await shoot(page, 'tasks');
    await page.setViewportSize({ width: 720, height: 700 });
    await shoot(page, 'tasks-narrow');
    await page.setViewportSize({ width: 1200, height: 820 });
    await c.getByRole('button', { name: 'Allow' }).click();
    await waitStatus(page, 'echo asked', 'done', 'Done');
    await until('"asked" in the output', async () => ((await c.locator('pre').textContent()) ?? '').includes('asked'));
  });

  await check('a destructive command asks with a warning; D denies it, and the card says Declined in grey', async () => {
    const cmd = 'rm -rf ./conch-e2e-nothing-here';
    await send(page, cmd, 'ask');
    const c = await waitStatus(page, cmd, 'needs-you', 'Needs your OK');
    const ask = c.locator('[data-ask]');
    await ask.locator('[data-danger-warning]').waitFor({ timeout: stepTimeout });
    if (!((await ask.locator('[data-danger-warning]').textContent()) ?? '').includes('rm -r')) throw new Error('the warning does not say what is destructive');
    await c.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-destructive');
    await ask.getByRole('button', { name: 'Deny' }).focus();
    await page.keyboard.press('d');
    await waitStatus(page, cmd, 'failed', 'Declined');
    if ((await c.locator('.chip.tone-red').count()) !== 0 || (await c.locator('.chip.tone-grey').count()) !== 1) throw new Error('a declined task is shown red');
    if (((await c.textContent()) ?? '').includes("Didn't finish")) throw new Error('a declined task says "Didn\'t finish"');
  });

  await check('a finished row never cuts its title before its summary (1440 and 900 px); it says when it finished, under its day; the filter finds it', async () => {
    const title = 'Mock the Stripe webhook';
    const long = 'Tests 31 passed, the webhook mock answered every event the billing service sent it, and nothing was left over in the queue afterwards';
    const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: `echo "${long}"`, title, options: { provider: 'shell', mode: 'auto' } });
    if (made.status !== 201) throw new Error(`creating the task answered ${made.status}`);
    const c = await waitStatus(page, title, 'done', 'Done');
    const fold = c.getByRole('button', { name: 'Fold into one line' });
    if (await fold.count()) await fold.click();
    await c.locator('.oneline').waitFor({ timeout: stepTimeout });
    for (const [width, height] of (([[1440, 900], [900, 700]]) as [number, number][])) {
      await page.setViewportSize({ width, height });
      await page.mouse.move(0, 0);
      await page.waitForTimeout(200);
      const m = await c.evaluate((el) => {
        const t = ((el.querySelector('h3')) as HTMLElement);
        const o = ((el.querySelector('.oneline')) as HTMLElement);
        return { titleCut: t.scrollWidth > t.clientWidth + 1, line: o ? o.getBoundingClientRect().width : -1 };
      });
      if (m.titleCut) throw new Error(`at ${width} px the title is cut (the summary is ${m.line}px wide)`);
      await shoot(page, `tasks-finished-${width}`);
    }
    await page.setViewportSize({ width: 1200, height: 820 });
    if (!/^(just now|\d+m ago)$/.test(((await c.locator('time').textContent()) ?? '').trim())) throw new Error(`the finish time says "${await c.locator('time').textContent()}"`);
    const finished = page.locator('[data-group="finished"]');
    if ((await finished.locator('[data-day]').first().textContent())?.trim() !== 'Today') throw new Error('the finished tasks are not under "Today"');
    await finished.getByRole('searchbox', { name: 'Filter finished tasks' }).fill('stripe webhook');
    await until('the filter to leave only that task', async () => (await finished.locator('[data-task-card]').count()) === 1 && (await finished.locator(`[data-task-card][data-task-id="${made.json.id}"]`).count()) === 1);
    await finished.getByRole('combobox', { name: 'Outcome' }).selectOption('declined');
    await finished.getByText('No finished task matches.').waitFor({ timeout: stepTimeout });
    await finished.getByRole('button', { name: 'Clear' }).click();
    await until('the whole list back', async () => (await finished.locator('[data-task-card]').count()) > 1);
  });

  await check('Try again runs a finished task again', async () => {
    const c = card(page, 'echo hello-e2e');
    const rev = Number(await c.getAttribute('data-rev'));
    // A finished card keeps what it does not need behind one "⋯" menu, reachable by keyboard.
    const more = c.getByRole('button', { name: 'More actions for echo hello-e2e' });
    await more.focus();
    await page.keyboard.press('ArrowDown');
    const menu = c.getByRole('menu');
    await menu.waitFor({ timeout: stepTimeout });
    await until('the first item to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('role') ?? '')) === 'menuitem');
    await page.keyboard.press('Escape');
    await until('the menu to close on its button', async () => (await menu.count()) === 0 && (await page.evaluate(() => document.activeElement?.getAttribute('aria-haspopup') ?? '')) === 'menu');
    await more.click();
    // Rows paint as layers of their own: the open menu must still be on
    // top of the cards after its own, every item of it.
    const covered = await menu.evaluate((m) =>
      Array.from(m.querySelectorAll('[role="menuitem"]')).filter((item) => {
        const r = item.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return !hit || !m.contains(hit);
      }).length,
    );
    if (covered > 0) throw new Error(`${covered} items of the open menu are under something else`);
    await menu.getByRole('menuitem', { name: 'Try again' }).click();
    await until('a new run to finish (rev to grow, status done)', async () => Number(await c.getAttribute('data-rev', { timeout: 1000 })) > rev + 1 && (await c.getAttribute('data-status', { timeout: 1000 })) === 'done');
    await until('"hello-e2e" in the output', async () => ((await c.locator('pre').textContent()) ?? '').includes('hello-e2e'));
  });

  await check('Try again on a stopped task shows it Working again', async () => {
    const c = card(page, 'sleep 30');
    await c.getByRole('button', { name: 'Try again' }).click();
    await waitStatus(page, 'sleep 30', 'running', 'Working');
    await c.getByRole('button', { name: 'Stop' }).click();
    await waitStatus(page, 'sleep 30', 'stopped', 'Stopped');
  });

  await check('Delete asks inline, Esc keeps the task, confirming removes it', async () => {
    const c = card(page, 'sleep 30');
    const more = c.getByRole('button', { name: 'More actions for sleep 30' });
    await more.click();
    await c.getByRole('menuitem', { name: 'Delete…' }).click();
    await c.getByRole('group', { name: 'Confirm delete' }).waitFor({ timeout: stepTimeout });
    await page.keyboard.press('Escape');
    await until('the confirmation to close', async () => (await c.getByRole('group', { name: 'Confirm delete' }).count()) === 0);
    await more.click();
    await c.getByRole('menuitem', { name: 'Delete…' }).click();
    await c.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Delete' }).click();
    await until('the card to go', async () => (await card(page, 'sleep 30').count()) === 0);
    const focused = await page.evaluate(() => document.activeElement?.tagName ?? '');
    if (focused === 'BODY' || focused === '') throw new Error('focus was lost when the card went');
  });

  await check('a refused command keeps the text and says why', async () => {
    const box = page.getByRole('textbox', { name: 'Shell command' });
    await box.fill('echo nowhere');
    await page.getByLabel('Folder').fill('/no/such/folder/for/conch-e2e');
    await page.getByLabel('Mode').selectOption('auto');
    await page.keyboard.press('Control+Shift+Enter');
    const alert = page.locator('form[aria-label="New background task"] [role="alert"]');
    await until('an error under the composer, or a card for it', async () => (await alert.count()) > 0 || (await card(page, 'echo nowhere').count()) > 0);
    if ((await alert.count()) > 0) {
      if ((await box.inputValue()) !== 'echo nowhere') throw new Error('the composer lost the text after an error');
      console.log(`      server said: ${await alert.textContent()}`);
    } else {
      // The server accepted the folder; the task must then fail and say so.
      await waitStatus(page, 'echo nowhere', 'failed', "Didn't finish");
    }
    await page.getByLabel('Folder').fill('');
    await box.fill('');
  });
}

/** Finished cards fold to one line after a reload. */
export async function folding(ctx: Suite): Promise<void> {
  const { page } = ctx;
  await check('after a reload finished cards fold to one line; Enter opens one, Esc folds it', async () => {
    await page.reload();
    const c = card(page, 'echo hello-e2e');
    await c.waitFor({ timeout: stepTimeout });
    if ((await c.locator('pre').count()) !== 0) throw new Error('a finished card loaded open');
    await shoot(page, 'folded');
    await c.getByRole('button', { name: 'Show details' }).focus();
    await page.keyboard.press('Enter');
    await until('the output to show', async () => ((await c.locator('pre').textContent({ timeout: 1000 })) ?? '').includes('hello-e2e'));
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await shoot(page, 'keyboard');
    await c.getByRole('button', { name: 'Fold into one line' }).focus();
    await page.keyboard.press('Escape');
    await until('the card to fold again', async () => (await c.locator('pre').count()) === 0);
  });
}

/** The app’s own events: app.compose and app.open. */
export async function appEvents(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('app.compose sends what the composer holds (or focuses it); app.open shows the task', async () => {
    // `conch serve` has no global shortcut or notification clicks: stand in for
    // them by putting the events on the page's stream.
    const sockets: WebSocketRoute[] = [];
    await page.routeWebSocket(/\/api\/events\?ticket=[0-9a-f]+$/, (ws) => {
      ws.connectToServer();
      sockets.push(ws);
    });
    await page.reload();
    await page.getByRole('heading', { level: 1 }).first().waitFor({ timeout: stepTimeout });
    await until('the event stream to open', async () => sockets.length > 0);
    const emit = (e: unknown) => sockets[sockets.length - 1]?.send(JSON.stringify(e));
    await visit(page, 'tasks');
    const box = page.getByRole('textbox', { name: 'Shell command' });
    await box.fill('echo composed');
    await page.getByLabel('Mode').selectOption('auto');
    await visit(page, 'settings');
    emit({ type: 'app.compose' });
    await waitStatus(page, 'echo composed', 'done', 'Done');
    await until('the composer to clear and have the focus', async () => (await box.inputValue()) === '' && (await page.evaluate(() => document.activeElement?.id)) === 'composer-text');
    await visit(page, 'doctor');
    emit({ type: 'app.compose' });
    await until('the empty composer to have the focus', async () => (await page.evaluate(() => document.activeElement?.id)) === 'composer-text');
    if ((await card(page, 'echo composed').count()) !== 1) throw new Error('an empty composer sent something');
    const tasks = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks;
    const hello = tasks.find((t: any) => t.text === 'echo hello-e2e');
    await visit(page, 'approvals');
    emit({ type: 'app.open', id: hello.id });
    await until('the card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === hello.id);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });
}

/** Past the first 100 finished tasks. */
export async function paging(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('past the first 100 finished tasks: scrolling loads the rest page by page, and a search by title finds one not loaded', async () => {
    // The oldest of 130 quick tasks, so the first page of the list leaves it out.
    const needle = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'true', title: 'Find the needle in the haystack', options: { provider: 'shell', mode: 'auto' } });
    if (needle.status !== 201) throw new Error(`creating the task answered ${needle.status}`);
    await until('it to finish', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${needle.json.id}`)).json?.status === 'done');
    for (let i = 0; i < 130; i++) {
      const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'true', title: `Scale row ${i}`, options: { provider: 'shell', mode: 'auto' } });
      if (made.status !== 201) throw new Error(`creating task ${i} answered ${made.status}`);
    }
    await until('all of them to finish', async () => {
      const l = (await api(origin, ctx.token, 'GET', '/api/tasks')).json;
      return l && l.counts.queued === undefined && l.counts.running === undefined && l.tasks.length >= 100 && l.next !== '';
    }, 60_000);
    const overview = (await api(origin, ctx.token, 'GET', '/api/tasks')).json;
    if (overview.tasks.some((t: any) => t.id === needle.json.id)) throw new Error('the first page holds the oldest task; the check needs more tasks');
    await page.reload();
    await visit(page, 'tasks');
    const finished = page.locator('[data-group="finished"]');
    const needleCard = finished.locator(`[data-task-card][data-task-id="${needle.json.id}"]`);
    await finished.locator('[data-task-card]').first().waitFor({ timeout: stepTimeout });
    const total = Object.entries(overview.counts).reduce((n, [s, c]) => n + (['done', 'failed', 'stopped', 'interrupted'].includes(s) ? Number(c) : 0), 0);
    await until(`the heading to count all ${total} finished`, async () => ((await finished.locator('h2 .count').textContent()) ?? '').replace(/\D/g, '') === String(total));
    // The list renders only what is in view: far fewer cards than tasks.
    const rendered = await finished.locator('[data-task-card]').count();
    if (rendered >= 100) throw new Error(`${rendered} cards are rendered at once`);

    // The palette asks the server: the task is found though no page holds it.
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('needle haystack');
    await until('the palette to find the task', async () => ((await palette(page).getByRole('option').first().textContent()) ?? '').includes('Find the needle in the haystack'));
    await page.keyboard.press('Escape');
    // So does the filter.
    const filter = finished.getByRole('searchbox', { name: 'Filter finished tasks' });
    await filter.fill('needle haystack');
    await needleCard.waitFor({ timeout: stepTimeout });
    await finished.getByRole('button', { name: 'Clear' }).click();
    await until('the card to leave with the filter', async () => (await needleCard.count()) === 0);

    // Scrolling down, a screen at a time, loads the next pages until that task shows.
    const scroller = page.locator('#tasks .scroll');
    await until('scrolling to reach the oldest of them', async () => {
      if ((await needleCard.count()) === 1) return true;
      await scroller.evaluate((el) => el.scrollBy({ top: el.clientHeight * 0.8 }));
      return false;
    }, 30_000);
    const seen = await finished.locator('[data-task-card]').count();
    if (seen >= 100) throw new Error(`${seen} cards are rendered at the end of the list`);
    // A jump, near or far past what was rendered around the view, shows
    // rows over the whole view at the next frame: the rows past the view
    // come a few a frame, never the ones in it.
    for (const by of [-3000, 1200, -600, 2400]) {
      const gap = await scroller.evaluate(async (el, dy) => {
        el.scrollBy({ top: dy });
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const view = el.getBoundingClientRect();
        const list = el.querySelector('[data-group="finished"] .vlist');
        if (!list) return 'no list';
        const l = list.getBoundingClientRect();
        const top = Math.max(view.top, l.top);
        const bottom = Math.min(view.bottom, l.bottom);
        if (bottom <= top) return '';
        const rows = Array.from(list.children);
        const first = rows[0]?.getBoundingClientRect();
        const last = rows[rows.length - 1]?.getBoundingClientRect();
        if (!first || !last || first.top > top + 1 || last.bottom < bottom - 1) return `rows from ${first?.top} to ${last?.bottom} px, the view from ${top} to ${bottom} px`;
        return '';
      }, by);
      if (gap !== '') throw new Error(`after scrolling ${by} px: ${gap}`);
    }
    await needleCard.scrollIntoViewIfNeeded();

    // A task that finishes while the person reads far down waits behind one
    // button instead of pushing the list down; the button brings it.
    const reading = await needleCard.boundingBox();
    const late = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'true', title: 'Finished while you read', options: { provider: 'shell', mode: 'auto' } });
    await until('it to finish', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${late.json.id}`)).json?.status === 'done');
    const more = finished.getByRole('button', { name: '1 new' });
    await more.waitFor({ timeout: stepTimeout });
    const after = await needleCard.boundingBox();
    if (!reading || !after || Math.abs(after.y - reading.y) > 1) throw new Error(`the card read moved from ${reading?.y} to ${after?.y} px`);
    await shoot(page, 'tasks-scrolled-far');
    await more.click();
    const lateCard = finished.locator(`[data-task-card][data-task-id="${late.json.id}"]`);
    await lateCard.waitFor({ timeout: stepTimeout });
    await until('the button to go', async () => (await more.count()) === 0);
    await scroller.evaluate((el) => el.scrollTo({ top: 0 }));
  });
}
