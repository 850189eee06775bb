// Helpers in git worktrees: kept work, overlaps, salvage, checks and Resume.

import { join } from 'node:path';
import type { Locator } from 'playwright-core';
import { modelChat, needsProviders } from '../shared/chat';
import { stepTimeout, temp } from '../shared/env';
import { gitIn, gitRepo } from '../shared/git';
import { api, shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import { conch, startServer, stopServer } from '../shared/server';
import type { Suite } from '../shared/suite';

/** Helpers’ worktrees, a verified check, salvaged work and Resume. */
export async function worktrees(ctx: Suite): Promise<void> {
  const { page, origin, home, project, serverEnv, model } = ctx;
  await check('a helper with a worktree keeps its branch and work on its card (chat and tasks page)', async () => {
    needsProviders(ctx);
    ctx.keptRepo = project;
    gitRepo(ctx.keptRepo, '# A repository for the e2e\n');
    const chatId = await modelChat(ctx, 'Worktree check', ctx.keptRepo);
    await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
    const view = page.locator('#chat');
    await view.getByRole('heading', { name: 'Worktree check', level: 1 }).waitFor({ timeout: stepTimeout });
    await until("the chat's header to name its folder as ~/projects/site", async () => ((await view.locator('.folder code').textContent({ timeout: 1000 })) ?? '').trim() === '~/projects/site');
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Please keep a worktree of your work');
    await box.press('Enter');
    await view.locator('[data-kind="assistant"]', { hasText: 'committed its file on a branch' }).waitFor({ timeout: 40_000 });
    const helper = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.find((t: any) => t.kind === 'helper' && t.parentConversationId === chatId);
    if (!helper) throw new Error('no helper on the server');
    if (helper.status !== 'done' || !helper.worktree?.kept) throw new Error(`the helper is ${helper.status}, worktree ${JSON.stringify(helper.worktree)}`);
    const branch = `conch/${helper.id}`;
    if (helper.worktree.branch !== branch) throw new Error(`its branch is ${helper.worktree.branch}`);
    const c = view.locator(`[data-task-card][data-task-id="${helper.id}"]`);
    await until('the card to say Done', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'done');
    const toggle = c.getByRole('button', { name: 'Show details' });
    if (await toggle.isVisible()) await toggle.click();
    const line = c.locator('[data-worktree="kept"]');
    await until('the branch and its work on the card', async () => {
      const text = ((await line.textContent({ timeout: 1000 })) ?? '').replace(/\s+/g, ' ');
      return text.includes(`conch/${helper.id.slice(-8)}`) && !text.includes(branch) && text.includes('1 commit ahead') && text.includes('Remove worktree');
    });
    // The branch shows short; its copy button copies it whole.
    if ((await line.locator('[data-copy]').getAttribute('data-copy')) !== branch) throw new Error('the copy button does not copy the whole branch');
    ctx.keptCard = c;
    await c.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-worktree-kept');
    // The tasks page's card shows the same line.
    await visit(page, 'tasks');
    const tc = page.locator(`article[data-task-id="${helper.id}"]`);
    const tToggle = tc.getByRole('button', { name: 'Show details' });
    if (await tToggle.isVisible()) await tToggle.click();
    await until('the tasks page card to show the branch', async () => ((await tc.locator('[data-worktree="kept"]').textContent({ timeout: 1000 })) ?? '').includes(`conch/${helper.id.slice(-8)}`));
    await until('the helper card to say whose helper it is', async () => /^Helper (\d+ of \d+ )?for \S/.test(((await tc.locator('[data-whose]').textContent({ timeout: 1000 })) ?? '').trim()));
    // Its folder is its worktree, under the home and named by the short id; the copy button copies it whole.
    const tree = join(home, 'worktrees', helper.id);
    if (!helper.cwd.startsWith(tree)) throw new Error(`the helper works in ${helper.cwd}, not in ${tree}`);
    const where = ((await tc.locator('[data-folder]').textContent()) ?? '').trim();
    if (!where.startsWith(`in ~/.conch/worktrees/${helper.id.slice(-8)}`) || where.includes(helper.id)) throw new Error(`the helper's folder reads "${where}"`);
    if ((await tc.getByRole('button', { name: 'Copy path' }).getAttribute('data-copy')) !== helper.cwd) throw new Error("the copy button does not copy the helper's whole folder");
    await tc.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-worktree-kept');
    await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
    await view.getByRole('heading', { name: 'Worktree check', level: 1 }).waitFor({ timeout: stepTimeout });
  });

  await check('Remove worktree asks, quoting the work; Esc keeps it; confirming removes the worktree and its branch', async () => {
    if (!ctx.keptCard) throw new Error('not run: no kept worktree');
    const c = ctx.keptCard;
    const toggle = c.getByRole('button', { name: 'Show details' });
    if (await toggle.isVisible()) await toggle.click();
    const remove = c.getByRole('button', { name: 'Remove worktree' });
    await remove.click();
    const confirm = c.getByRole('group', { name: /holds work/ });
    await confirm.waitFor({ timeout: stepTimeout });
    const said = ((await confirm.textContent()) ?? '').replace(/\s+/g, ' ');
    if (!said.includes('holds work (1 commit)')) throw new Error(`the confirmation says "${said}"`);
    if (/^Conflict/i.test(said)) throw new Error(`the confirmation starts with the error code: "${said}"`);
    const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    if (focused !== 'Keep it') throw new Error(`focus is on "${focused}", not "Keep it"`);
    await confirm.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-worktree-confirm');
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached', timeout: stepTimeout });
    await until('focus back on Remove worktree', async () => (await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '')) === 'Remove worktree');
    if ((await c.getAttribute('data-status')) !== 'done') throw new Error('Esc changed the card');
    if (gitIn(ctx.keptRepo)('branch', '--list', 'conch/*').trim() === '') throw new Error('Esc removed the branch');
    await page.keyboard.press('Enter');
    await confirm.waitFor({ timeout: stepTimeout });
    await c.getByRole('button', { name: 'Remove it and its branch' }).click();
    await c.locator('[data-worktree="removed"]').waitFor({ timeout: stepTimeout });
    const left = gitIn(ctx.keptRepo)('branch', '--list', 'conch/*').trim();
    if (left !== '') throw new Error(`branches left: ${left}`);
    if ((await c.getByRole('button', { name: 'Remove worktree' }).count()) !== 0) throw new Error('Remove worktree is still offered');
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-worktree-removed');
  });

  await check('two helpers that changed the same file say so on both cards and in the merged result', async () => {
    needsProviders(ctx);
    const repo = temp('conch-e2e-overlap-');
    gitRepo(repo, '# Two helpers, one file\n');
    const chatId = await modelChat(ctx, 'Overlap check', repo);
    await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
    const view = page.locator('#chat');
    await view.getByRole('heading', { name: 'Overlap check', level: 1 }).waitFor({ timeout: stepTimeout });
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Put two helpers on one file');
    await box.press('Enter');
    await view.locator('[data-kind="assistant"]', { hasText: 'changed the same file' }).waitFor({ timeout: 40_000 });
    const helpers = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.filter((t: any) => t.kind === 'helper' && t.parentConversationId === chatId);
    const fix = helpers.find((t: any) => t.title === 'Fix the bug');
    const tests = helpers.find((t: any) => t.title === 'Write the tests');
    if (!fix || !tests) throw new Error(`helpers: ${JSON.stringify(helpers.map((t: any) => t.title))}`);
    for (const h of [fix, tests]) {
      const o = h.worktree?.overlap ?? [];
      if (h.status !== 'done' || !h.worktree?.kept || o.length !== 1 || o[0].file !== 'src/app.ts') throw new Error(`${h.title}: ${h.status}, worktree ${JSON.stringify(h.worktree)}`);
    }
    const said = "Both 'Fix the bug' and 'Write the tests' changed src/app.ts.";
    const merged = model.requests.some((r) => (r.messages ?? []).some((m: any) => m.role === 'tool' && String(m.content ?? '').endsWith(said)));
    if (!merged) throw new Error('the merged result the assistant got does not name the overlap');
    const saysOverlap = (c: Locator, want: string) =>
      until(`"${want}" on the card`, async () => ((await c.locator('[data-overlap]').textContent({ timeout: 1000 })) ?? '').replace(/\s+/g, ' ').trim() === want);
    const fixCard = view.locator(`[data-task-card][data-task-id="${fix.id}"]`);
    const testsCard = view.locator(`[data-task-card][data-task-id="${tests.id}"]`);
    // Folded, as finished cards are, both still say it.
    await saysOverlap(fixCard, said);
    await saysOverlap(testsCard, "Both 'Write the tests' and 'Fix the bug' changed src/app.ts.");
    await view.locator('[data-kind="assistant"]', { hasText: 'changed the same file' }).scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-overlap');
    // Open, the line sits under the branch.
    await fixCard.getByRole('button', { name: 'Show details' }).click();
    await fixCard.locator('[data-worktree="kept"]').waitFor({ timeout: stepTimeout });
    await saysOverlap(fixCard, said);
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-overlap-open');
    await visit(page, 'tasks');
    const tc = page.locator(`article[data-task-id="${tests.id}"]`);
    await saysOverlap(tc, "Both 'Write the tests' and 'Fix the bug' changed src/app.ts.");
    await tc.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-overlap');
  });

  await check('a command with a check that passes says "Done (verified)"', async () => {
    const dir = temp('conch-e2e-check-');
    const made = await api(origin, ctx.token, 'POST', '/api/tasks', {
      text: 'printf ok > verified.txt',
      options: { provider: 'shell', mode: 'auto', cwd: dir, check: 'grep -q ok verified.txt' },
    });
    if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
    await visit(page, 'tasks');
    const c = page.locator(`article[data-task-id="${made.json.id}"]`);
    await until('the card to say Done (verified)', async () => ((await c.locator('.chip').textContent({ timeout: 1000 })) ?? '').trim() === 'Done (verified)');
    const t = (await api(origin, ctx.token, 'GET', `/api/tasks/${made.json.id}`)).json;
    if (t.result?.source !== 'check') throw new Error(`its result came from ${t.result?.source}`);
    await c.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-verified');
  });

  await check('a helper that fails with work in its worktree keeps it: the card lists it, Resume is offered, and Discard asks first, quoting it', async () => {
    needsProviders(ctx);
    const repo = temp('conch-e2e-salvage-');
    const git = gitRepo(repo, '# Salvage\n');
    const chatId = await modelChat(ctx, 'Salvage check', repo);
    await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
    const view = page.locator('#chat');
    await view.getByRole('heading', { name: 'Salvage check', level: 1 }).waitFor({ timeout: stepTimeout });
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Please draft and fall over');
    await box.press('Enter');
    await view.locator('[data-kind="assistant"]', { hasText: 'its work is kept' }).waitFor({ timeout: 40_000 });
    const helper = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.find((t: any) => t.kind === 'helper' && t.parentConversationId === chatId);
    const ref = `refs/conch/salvage/${helper?.id}`;
    if (helper?.status !== 'failed' || helper.worktree?.salvage?.ref !== ref) throw new Error(`the helper: ${JSON.stringify(helper)}`);
    if (git('show', `${ref}:draft.md`) !== 'half a draft\n') throw new Error('the salvage ref does not hold the draft');
    const c = view.locator(`[data-task-card][data-task-id="${helper.id}"]`);
    const toggle = c.getByRole('button', { name: 'Show details' });
    if (await toggle.isVisible()) await toggle.click();
    const note = c.getByRole('region', { name: 'Unfinished work' });
    await until('the card to list the draft', async () => ((await note.textContent({ timeout: 1000 })) ?? '').includes('draft.md'));
    await c.getByRole('button', { name: 'Resume' }).waitFor({ timeout: stepTimeout });
    await c.getByRole('button', { name: 'Open folder' }).waitFor({ timeout: stepTimeout });
    await c.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-salvage');
    await c.getByRole('button', { name: 'Discard' }).click();
    const confirm = c.getByRole('group', { name: /holds work/ });
    await confirm.waitFor({ timeout: stepTimeout });
    const said = ((await confirm.textContent()) ?? '').replace(/\s+/g, ' ');
    if (!said.includes('draft.md')) throw new Error(`the confirmation does not quote what would be lost: "${said}"`);
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-salvage-discard');
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached', timeout: stepTimeout });
    if (git('rev-parse', '--verify', '--quiet', ref).trim() === '') throw new Error('Esc dropped the salvage');
    await c.getByRole('button', { name: 'Discard' }).click();
    await c.getByRole('button', { name: 'Discard it all' }).click();
    await c.locator('[data-worktree="removed"]').waitFor({ timeout: stepTimeout });
    let gone = false;
    try {
      git('rev-parse', '--verify', '--quiet', ref);
    } catch {
      gone = true;
    }
    if (!gone) throw new Error('the salvage ref is still there after Discard');
  });

  await check('Resume on an interrupted card carries the task on, its model told what happened', async () => {
    if (!ctx.parentChat) throw new Error('not run: no chat to send from');
    const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'Summarise the notes, but slowly please', conversationId: ctx.parentChat });
    if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
    const id = made.json.id;
    await until('the task to work', async () => (await api(origin, ctx.token, 'GET', `/api/tasks/${id}`)).json?.status === 'running');
    const port = new URL(origin).port;
    const s = conch.child;
    stopServer();
    await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
    await startServer(home, `127.0.0.1:${port}`, serverEnv);
    await visit(page, 'tasks');
    const c = page.locator(`article[data-task-id="${id}"]`);
    await until('the card to say Interrupted', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'interrupted');
    const resume = c.getByRole('button', { name: 'Resume' });
    await resume.waitFor({ timeout: stepTimeout });
    await c.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-interrupted-resume');
    const before = model.requests.length;
    await resume.click();
    await until('the card to be done', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'done', 30_000);
    const told = model.requests.slice(before).some((r) => JSON.stringify(r.messages ?? []).includes('Conch stopped while this was running') && JSON.stringify(r.messages ?? []).includes('Summarise the notes, but slowly please'));
    if (!told) throw new Error("the resumed task's model was not told what happened, with its transcript");
  });
}
