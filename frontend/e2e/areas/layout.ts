// Layout: nothing cut or sideways, folders written ~/…, the sidebar.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { layoutProblems } from '../layout';
import { stepTimeout } from '../shared/env';
import { api, palette, shoot, until, visit, waitStatus } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** The sidebar with a long chat title. */
export async function sidebar(ctx: Suite): Promise<void> {
  const { page, origin, chatDir } = ctx;
  await check('the sidebar keeps a long chat title, its highlight and its dot inside it, at 1200 and 900 px', async () => {
    // The chat the checks after this one go on in.
    const back = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
    const made = await api(origin, ctx.token, 'POST', '/api/conversations', {
      title: 'A very long chat title that runs on well past the width of the sidebar and then some more',
      provider: 'shell',
      mode: 'ask',
      cwd: chatDir,
    });
    if (made.status !== 201) throw new Error(`POST /api/conversations: ${made.status} ${JSON.stringify(made.json)}`);
    const long = made.json.id;
    await page.locator(`nav a[data-chat-id="${long}"]`).waitFor({ timeout: stepTimeout });
    await page.locator(`nav a[data-chat-id="${long}"]`).click();
    await api(origin, ctx.token, 'POST', `/api/conversations/${long}/messages`, { text: 'true' });
    await page.locator(`nav a[data-chat-id="${long}"] .dot`).waitFor({ timeout: stepTimeout });
    for (const size of [{ width: 1200, height: 820 }, { width: 900, height: 700 }]) {
      await page.setViewportSize(size);
      await page.waitForTimeout(150);
      const m = await page.evaluate((cid) => {
        const nav = ((document.querySelector('nav.side')) as HTMLElement);
        const list = ((nav.querySelector('.chats')) as HTMLElement);
        const a = ((nav.querySelector(`a[data-chat-id="${cid}"]`)) as HTMLElement);
        const title = ((a.querySelector('.chat-title')) as HTMLElement);
        const n = nav.getBoundingClientRect();
        const r = a.getBoundingClientRect();
        const dots = Array.from(nav.querySelectorAll('.chats .dot')).map((d) => d.getBoundingClientRect().right);
        return {
          ellipsis: getComputedStyle(title).textOverflow === 'ellipsis' && title.scrollWidth > title.clientWidth,
          inside: r.left >= n.left && r.right <= n.right - 1,
          dotsInside: dots.every((x) => x <= n.right - 1),
          scrollsSideways: list.scrollWidth > list.clientWidth,
        };
      }, long);
      const fits = await page.evaluate(() => {
        const page = ((document.querySelector('#chat')) as HTMLElement);
        return page.getBoundingClientRect().right <= window.innerWidth + 1;
      });
      if (!m.ellipsis || !m.inside || !m.dotsInside || m.scrollsSideways || !fits) throw new Error(`at ${size.width} px: ${JSON.stringify({ ...m, fits })}`);
      await page.mouse.move(0, 0);
      await shoot(page, `sidebar-long-${size.width}`);
    }
    await page.setViewportSize({ width: 1200, height: 820 });
    await until('the long chat to settle', async () => {
      const c = (await api(origin, ctx.token, 'GET', `/api/conversations/${long}`)).json.conversation;
      if (c.ask) await api(origin, ctx.token, 'POST', `/api/conversations/${long}/asks/${c.ask.id}`, { allow: false });
      return !c.running;
    });
    await page.locator(`nav a[data-chat-id="${back}"]`).click();
    await until('the chat before to be back', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(back)}`);
  });
}

/** Folders under the home read ~/… everywhere. */
export async function folders(ctx: Suite): Promise<void> {
  const { page, origin, project } = ctx;
  await check('a folder under the home reads ~/… in a question, on its card, in Approvals and in a chat header', async () => {
    const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo from the site folder', options: { provider: 'shell', mode: 'ask', cwd: project } });
    if (made.status !== 201) throw new Error(`creating the task answered ${made.status}`);
    ctx.folderTask = made.json.id;
    await visit(page, 'tasks');
    const c = await waitStatus(page, 'echo from the site folder', 'needs-you', 'Needs your OK');
    await until('the question to name the folder as ~/projects/site', async () => ((await c.locator('[data-ask-detail]').textContent({ timeout: 1000 })) ?? '').includes('in ~/projects/site'));
    const where = c.locator('[data-folder]');
    if (((await where.textContent()) ?? '').trim() !== 'in ~/projects/site') throw new Error(`the card's footer says "${await where.textContent()}"`);
    if ((await where.getAttribute('title')) !== project) throw new Error(`the footer's title is ${await where.getAttribute('title')}`);
    if ((await c.getByRole('button', { name: 'Copy path' }).getAttribute('data-copy')) !== project) throw new Error('the copy button does not copy the whole folder');
    await visit(page, 'approvals');
    const item = page.locator(`[data-approval][data-task-id="${ctx.folderTask}"]`);
    await until('Approvals to name the folder as ~/projects/site', async () => ((await item.textContent({ timeout: 1000 })) ?? '').includes('a command in ~/projects/site'));
    const chat = await api(origin, ctx.token, 'POST', '/api/conversations', { title: 'Site folder', provider: 'shell', mode: 'ask', cwd: project });
    if (chat.status !== 201) throw new Error(`POST /api/conversations: ${chat.status} ${JSON.stringify(chat.json)}`);
    await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chat.json.id);
    const view = page.locator('#chat');
    await view.getByRole('heading', { name: 'Site folder', level: 1 }).waitFor({ timeout: stepTimeout });
    const folder = view.locator('.folder');
    await until("the chat's header to name its folder as ~/projects/site", async () => ((await folder.textContent({ timeout: 1000 })) ?? '').trim() === '~/projects/site');
    if ((await folder.getAttribute('title')) !== project) throw new Error(`the header's title is ${await folder.getAttribute('title')}`);
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-folder-home');
    // The doctor's sentences too: the store is Conch's home's, under the person's.
    await visit(page, 'doctor');
    await until("the doctor to name the store as ~/.conch/conch.db", async () => ((await page.locator('[data-check="store"] .details').textContent({ timeout: 1000 })) ?? '').includes('Database: ~/.conch/conch.db'));
  });
}

/** Every page at two sizes, light and dark. */
export async function pages(ctx: Suite): Promise<void> {
  const { page, origin, project } = ctx;
  await check('every page at 1440×900 and 900×700, light and dark: nothing cut, nothing scrolls sideways', async () => {
    // Rows that test the widths: long titles finished and failed, one at
    // work in a deep folder, the question above (folderTask) waiting.
    const long = 'Check that every page of the site still renders after the dependency upgrade';
    const deep = join(project, 'packages', 'a-rather-long-package-name-for-the-footer', 'src', 'components', 'forms', 'fields');
    mkdirSync(deep, { recursive: true });
    const made: string[] = [];
    for (const [text, title, cwd] of [['echo upgraded', long, project], ['exit 3', `${long}, twice`, project], ['sleep 60', `${long} while it sleeps`, deep]]) {
      const r = await api(origin, ctx.token, 'POST', '/api/tasks', { text, title, options: { provider: 'shell', mode: 'auto', cwd } });
      if (r.status !== 201) throw new Error(`creating "${title}" answered ${r.status}`);
      made.push(r.json.id);
    }
    await visit(page, 'tasks');
    await page.locator('#tasks .scroll').first().evaluate((el) => el.scrollTo({ top: 0 }));
    await waitStatus(page, long, 'done', 'Done');
    await waitStatus(page, `${long}, twice`, 'failed', "Didn't finish");
    await waitStatus(page, `${long} while it sleeps`, 'running', 'Working');
    const chatId = ctx.parentChat || (await page.locator('nav a[data-chat-id]').first().getAttribute('data-chat-id')) || '';
    const pages: [string, string][] = [
      ['welcome', '#welcome'],
      ['tasks', '#tasks'],
      ['chat', `#chat/${encodeURIComponent(chatId)}`],
      ['approvals', '#approvals'],
      ['activity', '#activity'],
      ['routines', '#routines'],
      ['providers', '#providers'],
      ['doctor', '#doctor'],
      ['settings', '#settings'],
    ];
    const cut: string[] = [];
    const measure = async (where: string) => {
      for (const p of await layoutProblems(page)) cut.push(`${where}: ${p}`);
    };
    for (const size of [{ width: 1440, height: 900 }, { width: 900, height: 700 }]) {
      await page.setViewportSize(size);
      for (const [name, hash] of pages) {
        await page.evaluate((h) => (location.hash = h), hash);
        await page.locator(`#${name.split('-')[0]}`).waitFor({ timeout: stepTimeout });
        await page.waitForTimeout(300);
        await page.mouse.move(0, 0);
        await measure(`${name} at ${size.width} px`);
        await shoot(page, `screen-${name}-${size.width}`);
        // What lies further down: the finished rows, the chat's helpers.
        const below = name === 'tasks' ? '#tasks [data-group="finished"]' : name === 'chat' ? '#chat [data-task-group]' : '';
        if (below && (await page.locator(below).count()) > 0) {
          await page.locator(below).first().evaluate((el) => el.scrollIntoView({ block: 'start' }));
          await page.mouse.move(0, 0);
          await measure(`${name}, scrolled, at ${size.width} px`);
          await shoot(page, `screen-${name}-below-${size.width}`);
          await page.locator(`#${name} .scroll`).first().evaluate((el) => el.scrollTo({ top: 0 }));
        }
      }
      await page.keyboard.press('Control+K');
      await palette(page).waitFor({ timeout: stepTimeout });
      await measure(`the palette at ${size.width} px`);
      await shoot(page, `screen-palette-${size.width}`);
      await page.keyboard.type('echo');
      await page.waitForTimeout(150);
      await measure(`the palette's actions at ${size.width} px`);
      await shoot(page, `screen-palette-actions-${size.width}`);
      await palette(page).getByRole('combobox').fill('narwhals');
      await palette(page).getByText('In output', { exact: true }).waitFor({ timeout: stepTimeout });
      await measure(`the palette's full-text hits at ${size.width} px`);
      await shoot(page, `screen-palette-search-${size.width}`);
      await page.keyboard.press('Escape');
    }
    await page.setViewportSize({ width: 1200, height: 820 });
    await api(origin, ctx.token, 'POST', `/api/tasks/${made[2]}/stop`);
    if (ctx.folderTask) {
      const t = (await api(origin, ctx.token, 'GET', `/api/tasks/${ctx.folderTask}`)).json;
      if (t?.ask) await api(origin, ctx.token, 'POST', `/api/tasks/${ctx.folderTask}/answer`, { askId: t.ask.id, allow: false });
    }
    if (cut.length > 0) throw new Error(`${cut.length} things cut or scrolling sideways: ${cut.slice(0, 16).join(' | ')}`);
  });
}
