// Chats: the shell, a model that streams and calls tools, hand-offs to the background and to helpers, and the sidebar’s pages.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WebSocketRoute } from 'playwright-core';
import { needsProviders } from '../shared/chat';
import { stepTimeout } from '../shared/env';
import { api, card, palette, shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** A chat on the shell alone. */
export async function shellChat(ctx: Suite): Promise<void> {
  const { page, origin, chatDir } = ctx;
  await check('a new chat with only the shell says what it does and how to connect a model; a message runs as a command', async () => {
    await page.locator('nav button', { hasText: 'New chat' }).click();
    const view = page.locator('#chat');
    await view.getByRole('heading', { name: 'New chat', level: 1 }).waitFor({ timeout: stepTimeout });
    const probe = await api(origin, ctx.token, 'GET', '/api/providers');
    ctx.providersLanded = probe.status === 200;
    const shell = probe.json?.providers?.find((p: any) => p.id === 'shell');
    if (!shell?.ready || shell.source !== 'builtin') throw new Error(`GET /api/providers lists no ready built-in shell: ${JSON.stringify(probe.json)}`);
    await view.getByText('This chat is the shell').waitFor({ timeout: stepTimeout });
    await view.getByRole('link', { name: 'Open Providers' }).waitFor({ timeout: stepTimeout });
    const picker = view.getByLabel('Provider and model');
    if (!((await picker.locator('option:checked').textContent()) ?? '').includes('Shell')) throw new Error(`the picker shows "${await picker.locator('option:checked').textContent()}"`);
    if ((await view.locator('.spend').count()) !== 0) throw new Error('a new chat on the shell shows a spend');
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-new-empty');
    await view.getByLabel('Mode', { exact: true }).selectOption('auto');
    await view.getByLabel('Folder').fill(chatDir);
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('echo hello-from-the-shell-chat && cat notes.txt');
    await box.press('Enter');
    const reply = view.locator('[data-kind="assistant"]', { hasText: 'hello from e2e' });
    await reply.waitFor({ timeout: stepTimeout });
    if (!((await reply.textContent()) ?? '').includes('hello-from-the-shell-chat')) throw new Error(`the shell replied "${await reply.textContent()}"`);
    await view.locator('[data-step="run_command"]').waitFor({ timeout: stepTimeout });
    await shoot(page, 'chat-shell');
  });
}

/** Talking in a chat: streaming, steps, asks, taint, rename, drafts. */
export async function talk(ctx: Suite): Promise<void> {
  const { page, origin, model, chatDir } = ctx;
  await check('a chat in ask mode streams a reply, shows the step, asks before writing and writes once allowed', async () => {
    needsProviders(ctx);
    await page.locator('nav button', { hasText: 'New chat' }).click();
    const view = page.locator('#chat');
    await view.getByRole('heading', { name: 'New chat', level: 1 }).waitFor({ timeout: stepTimeout });
    const picker = view.getByLabel('Provider and model');
    await until('the model to be offered', async () => (await picker.locator('option:not([disabled])', { hasText: 'E2E Model · test-model' }).count()) > 0);
    await picker.selectOption({ label: 'E2E Model · test-model' });
    await view.getByLabel('Mode', { exact: true }).selectOption('ask');
    await view.getByLabel('Folder').fill(chatDir);
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('What does notes.txt say?');
    await box.press('Enter');
    await until('the chat to open at its own address', async () => /^#chat\/.+/.test(await page.evaluate(() => location.hash)));
    await view.locator('[data-kind="user"]', { hasText: 'What does notes.txt say?' }).waitFor({ timeout: stepTimeout });
    await view.locator('[data-step="read_file"]').waitFor({ timeout: stepTimeout });
    const stepText = (await view.locator('[data-step="read_file"]').textContent()) ?? '';
    if (!/Read/.test(stepText) || !stepText.includes('notes.txt')) throw new Error(`the step says "${stepText.trim()}"`);
    const streaming = view.locator('[data-kind="assistant"][data-streaming="true"]');
    await until('the reply to stream in', async () => (await streaming.count()) > 0, stepTimeout);
    const reply = view.locator('[data-kind="assistant"][data-streaming="false"]', { hasText: 'hello from e2e' });
    await reply.waitFor({ timeout: stepTimeout });
    if ((await reply.locator('strong').count()) !== 1 || (await reply.locator('pre.code').count()) !== 1) throw new Error('the reply is not rendered as markdown');
    if (!((await reply.textContent()) ?? '').includes('<script>')) throw new Error('the <script> in the reply is not shown as text');
    await view.locator('[data-step="read_file"] button').click();
    await view.locator('[data-step="read_file"] pre', { hasText: 'hello from e2e' }).waitFor({ timeout: stepTimeout });
    // Its arguments read as labelled rows, not raw JSON above the output.
    const args = ((await view.locator('[data-step="read_file"] .args').textContent()) ?? '').replace(/\s+/g, ' ').trim();
    if (args !== 'Path notes.txt') throw new Error(`the step's arguments read "${args}"`);
    await until('the sidebar to list the chat', async () => (await page.locator('nav a[data-chat-id]').count()) > 0);

    await box.fill('Now write out.txt please');
    await box.press('Enter');
    const ask = view.getByRole('region', { name: 'Question' });
    await ask.getByRole('button', { name: 'Allow' }).waitFor({ timeout: stepTimeout });
    await until('the time left to show', async () => /\d+m \d\ds left/.test((await ask.locator('[aria-label="Time left"]').textContent()) ?? ''));
    // A file write is asked with its diff.
    await until('the diff of out.txt', async () => {
      const d = ((await ask.locator('[data-ask-diff]').textContent()) ?? '').replace(/\s+/g, ' ');
      return d.includes('out.txt') && d.includes('written by e2e') && d.includes('+1');
    });
    // One "needs you" count: the sidebar's two badges, the palette, Approvals and the tasks page agree.
    const chatHash = await page.evaluate(() => location.hash);
    const n = await until('the approvals badge', async () => ((await page.getByTestId('approvals-badge').textContent()) ?? '').trim().match(/^\d+/)?.[0] ?? null);
    const tasksBadge = ((await page.locator('nav a[href="#tasks"] .badge [aria-hidden="true"]').textContent()) ?? '').trim();
    if (tasksBadge !== n) throw new Error(`the sidebar says Tasks ${tasksBadge} and Approvals ${n}`);
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('Approvals');
    await until('the palette to say how many wait', async () => ((await palette(page).getByRole('option').first().textContent()) ?? '').includes(`${n} waiting`));
    await page.keyboard.press('Escape');
    /** Screenshots at the two window sizes people use. */
    const sizes = async (name: string) => {
      for (const size of [{ width: 1440, height: 900 }, { width: 900, height: 700 }]) {
        await page.setViewportSize(size);
        await page.mouse.move(0, 0);
        await shoot(page, `${name}-${size.width}`);
      }
      await page.setViewportSize({ width: 1200, height: 820 });
    };
    await visit(page, 'approvals');
    await until('the Approvals page to count the same', async () => ((await page.locator('#approvals').textContent()) ?? '').includes(`${n} waiting`) && (await page.locator('[data-approval]').count()) === Number(n));
    await sizes('approvals-chat-question');
    await visit(page, 'tasks');
    await until('the tasks page to count the same', async () => ((await page.locator('[data-task-counts]').textContent()) ?? '').includes(`${n} need`) && ((await page.locator('[data-group="needs-you"] h2').textContent()) ?? '').includes(n));
    await sizes('tasks-chat-question');
    await page.locator(`nav a[href="${chatHash}"]`).click();
    await ask.getByRole('button', { name: 'Allow' }).waitFor({ timeout: stepTimeout });
    await page.mouse.move(0, 0);
    await shoot(page, 'chat');
    if (existsSync(join(chatDir, 'out.txt'))) throw new Error('the file was written before the person allowed it');
    await ask.getByRole('button', { name: 'Allow' }).click();
    await until('the file to be written', async () => existsSync(join(chatDir, 'out.txt')) && readFileSync(join(chatDir, 'out.txt'), 'utf8') === 'written by e2e\n');
    await view.locator('[data-kind="assistant"]', { hasText: 'Done: I wrote' }).waitFor({ timeout: stepTimeout });
    await until('the ask to show it was allowed', async () => ((await view.locator('[data-ask-id]').first().textContent()) ?? '').includes('Allowed'));
    await until('Stop to go once the turn ended', async () => (await view.getByRole('button', { name: 'Stop' }).count()) === 0);
    await shoot(page, 'chat-done');
    const sent = JSON.stringify(model.requests);
    if (!sent.includes('hello from e2e')) throw new Error('the model never got the file it read');
  });

  await check('a command that reaches the network taints the chat; Clear untaints it', async () => {
    needsProviders(ctx);
    const view = page.locator('#chat');
    const id = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Try curl on that address');
    await box.press('Enter');
    const pending = view.locator('[data-ask]');
    await pending.getByRole('button', { name: 'Allow' }).click();
    await view.locator('[data-kind="assistant"]', { hasText: 'nothing answered' }).waitFor({ timeout: stepTimeout });
    const badge = view.getByText('Tainted: asks before every action');
    await badge.waitFor({ timeout: stepTimeout });
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-tainted');
    await view.getByRole('button', { name: 'Clear' }).click();
    await until('the badge to go', async () => (await badge.count()) === 0);
    if ((await api(origin, ctx.token, 'GET', `/api/conversations/${id}`)).json.conversation.tainted) throw new Error('the server still has the chat tainted');
  });

  await check("a chat's question waits in Approvals beside the tasks' and is answered there", async () => {
    needsProviders(ctx);
    const view = page.locator('#chat');
    const id = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Now write out.txt please');
    await box.press('Enter');
    await view.locator('[data-ask]').waitFor({ timeout: stepTimeout });
    await visit(page, 'approvals');
    const item = page.locator(`[data-approval][data-conversation-id="${id}"]`);
    await item.waitFor({ timeout: stepTimeout });
    if (!((await item.textContent()) ?? '').includes('a chat')) throw new Error(`the item says "${await item.textContent()}"`);
    await until('the sidebar to count it', async () => ((await page.locator('nav a[href="#approvals"]').textContent()) ?? '').includes('1'));
    await item.getByRole('button', { name: 'Allow' }).click();
    await until('the item to leave the list', async () => (await item.count()) === 0);
    await until('the chat to finish its turn', async () => !(await api(origin, ctx.token, 'GET', `/api/conversations/${id}`)).json.conversation.running);
    await page.locator(`nav a[data-chat-id="${id}"]`).click();
    await until('the chat to open again', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(id)}`);
  });

  await check('a chat is renamed in place and found in the palette', async () => {
    needsProviders(ctx);
    const view = page.locator('#chat');
    const id = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
    await view.getByRole('button', { name: 'What does notes.txt say?' }).click();
    const input = view.getByLabel('Chat title');
    await input.fill('Notes check');
    await input.press('Enter');
    await until('the server to have the new title', async () => (await api(origin, ctx.token, 'GET', `/api/conversations/${id}`)).json.conversation.title === 'Notes check');
    await page.locator(`nav a[data-chat-id="${id}"]`, { hasText: 'Notes check' }).waitFor({ timeout: stepTimeout });
    await visit(page, 'doctor');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('notes check');
    await until('the chat to be the best match', async () => ((await palette(page).getByRole('option').first().textContent()) ?? '').includes('Notes check'));
    await page.keyboard.press('Enter');
    await until('the chat to show', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(id)}`);
    await page.locator('#chat').getByRole('button', { name: 'Notes check' }).waitFor({ timeout: stepTimeout });
  });

  await check('each chat keeps its own draft; a table in a reply renders as a table; an attachment is named, not dropped', async () => {
    needsProviders(ctx);
    const view = page.locator('#chat');
    const id = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('half a thought for the notes chat');
    await page.locator('nav button', { hasText: 'New chat' }).click();
    await view.getByRole('heading', { name: 'New chat', level: 1 }).waitFor({ timeout: stepTimeout });
    if ((await box.inputValue()) !== '') throw new Error(`the new chat's composer holds "${await box.inputValue()}"`);
    await box.fill('a new chat of its own');
    const other = await page.locator('nav a[data-chat-id]').evaluateAll((els, notes) => els.map((e) => e.getAttribute('data-chat-id')).find((c) => c !== notes), id);
    if (other) {
      await page.locator(`nav a[data-chat-id="${other}"]`).click();
      await until('the other chat to open', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(other)}`);
      if ((await box.inputValue()) !== '') throw new Error(`another chat's composer holds "${await box.inputValue()}"`);
    }
    await page.locator(`nav a[data-chat-id="${id}"]`).click();
    await until('the notes chat to hold its draft again', async () => (await box.inputValue()) === 'half a thought for the notes chat');
    await page.locator('nav button', { hasText: 'New chat' }).click();
    await until('the new chat to hold its own draft', async () => (await box.inputValue()) === 'a new chat of its own');
    await box.fill('');
    await page.locator(`nav a[data-chat-id="${id}"]`).click();
    await until('the notes chat to open', async () => (await box.inputValue()) === 'half a thought for the notes chat');

    // A file pasted, then dropped: named in a sentence, the text box untouched.
    await box.evaluate((el) => {
      const dt = new DataTransfer();
      dt.items.add(new File(['%PDF'], 'report.pdf', { type: 'application/pdf' }));
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    });
    const notice = view.locator('[data-attachment-notice]');
    await notice.waitFor({ timeout: stepTimeout });
    if (!((await notice.textContent()) ?? '').includes("don't take attachments yet, so report.pdf was not added")) throw new Error(`the notice says "${await notice.textContent()}"`);
    await shoot(page, 'chat-attachment');
    await notice.getByRole('button', { name: 'Dismiss' }).click();
    await box.evaluate((el) => {
      const dt = new DataTransfer();
      dt.items.add(new File(['png'], 'screen.png', { type: 'image/png' }));
      el.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    await until('the drop to be named', async () => ((await notice.textContent()) ?? '').includes('screen.png was not added'));
    if ((await box.inputValue()) !== 'half a thought for the notes chat') throw new Error(`the text box changed to "${await box.inputValue()}"`);

    await box.fill('Show the files as a table');
    await box.press('Enter');
    const table = view.locator('[data-kind="assistant"][data-streaming="false"] table');
    await table.waitFor({ timeout: stepTimeout });
    const cells = await table.locator('th, td').allTextContents();
    if (cells.join('|') !== 'File|Lines|notes.txt|1|out.txt|1') throw new Error(`the table holds ${JSON.stringify(cells)}`);
    if (((await view.locator('[data-kind="assistant"]').last().textContent()) ?? '').includes('|')) throw new Error('the reply still shows raw pipes');
    await until('the turn to end', async () => !(await api(origin, ctx.token, 'GET', `/api/conversations/${id}`)).json.conversation.running);
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-table');

    // A usage limit reads as one sentence: the provider named once, the reset in local time, what to do.
    // In a chat of its own: the model keeps seeing the words of a message it never answered.
    const conv = (await api(origin, ctx.token, 'GET', `/api/conversations/${id}`)).json.conversation;
    const spent = await api(origin, ctx.token, 'POST', '/api/conversations', { title: 'Limit check', provider: conv.provider, model: conv.model, mode: 'ask', cwd: chatDir });
    if (spent.status !== 201) throw new Error(`POST /api/conversations: ${spent.status} ${JSON.stringify(spent.json)}`);
    await page.locator(`nav a[data-chat-id="${spent.json.id}"]`).click();
    await until('the limit chat to open', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(spent.json.id)}`);
    await box.fill('Go on, even though we are over the limit');
    await box.press('Enter');
    const limit = view.locator('[data-kind="limit"]');
    await limit.waitFor({ timeout: stepTimeout });
    const said = ((await limit.locator('p').textContent()) ?? '').trim();
    if (!/^E2E Model reached its usage limit\. It resets at .+; switch to another provider, or send again then\.$/.test(said) || /\d{4}-\d\d-\d\dT/.test(said)) throw new Error(`the limit says "${said}"`);
    await limit.getByRole('button', { name: 'Switch provider' }).click();
    await until('the picker to have the focus', async () => view.getByLabel('Provider and model').evaluate((el) => el === document.activeElement));
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-limit');
    await page.locator(`nav a[data-chat-id="${id}"]`).click();
    await until('the notes chat to be back', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(id)}`);
    await box.fill('');
  });
}

/** Work handed off from a chat: background tasks and helpers, their cards and results. */
export async function handOff(ctx: Suite): Promise<void> {
  const { page, origin, model, chatDir, taskCard } = ctx;
  await check('Ctrl+Shift+Enter in a chat sends the text to the background; its card updates in place', async () => {
    needsProviders(ctx);
    const view = page.locator('#chat');
    ctx.parentChat = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Summarise the notes file for me');
    await view.getByRole('button', { name: /Do it in the background/ }).waitFor({ timeout: stepTimeout });
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-composer-background');
    await box.focus();
    await page.keyboard.press('Control+Shift+Enter');
    await until('the composer to clear', async () => (await box.inputValue()) === '');
    ctx.bgTask = await until('the task on the server, sent from this chat', async () => {
      const list = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks;
      return list.find((t: any) => t.text === 'Summarise the notes file for me' && t.parentConversationId === ctx.parentChat);
    });
    if (!ctx.bgTask.conversationId) throw new Error('the task has no chat of its own');
    const c = taskCard(ctx.bgTask.id);
    await c.waitFor({ timeout: stepTimeout });
    const seen: string[] = [];
    await until('the card to be done, seen working first', async () => {
      if ((await c.count()) !== 1) throw new Error(`${await c.count()} cards for one task`);
      const st = (await c.getAttribute('data-status', { timeout: 1000 })) ?? '';
      if (seen[seen.length - 1] !== st) seen.push(st);
      if (st === 'running' && !seen.includes('shot')) {
        seen.push('shot');
        await page.mouse.move(0, 0);
        await shoot(page, 'chat-task-working');
      }
      return st === 'done';
    }, 30_000);
    if (!seen.some((st) => st === 'queued' || st === 'running')) throw new Error(`the card was never seen working (saw ${seen.join(', ')})`);
    if ((await view.locator('[data-task-card]').count()) !== 1) throw new Error('more than one card in the chat');
    if (!model.requests.some((r) => JSON.stringify(r.messages ?? []).includes('Summarise the notes file for me') && (r.tools ?? []).some((t: any) => t.function?.name === 'report_result'))) {
      throw new Error("the task's own chat never asked the model");
    }
    if ((await page.locator(`nav a[data-chat-id="${ctx.bgTask.conversationId}"]`).count()) !== 0) throw new Error('the task chat is in the chat list');
  });

  await check('the result of the background task comes back into the chat', async () => {
    if (!ctx.bgTask) throw new Error('not run: no background task');
    const view = page.locator('#chat');
    const result = view.locator(`[data-task-result][data-task-id="${ctx.bgTask.id}"]`);
    await result.waitFor({ timeout: stepTimeout });
    await until('the summary as markdown', async () => (await result.locator('strong', { hasText: 'hello from e2e' }).count()) === 1);
    const c = taskCard(ctx.bgTask.id);
    const before = await c.boundingBox();
    const after = await result.boundingBox();
    if (!before || !after || before.y >= after.y) throw new Error('the result is not below the card');
    await c.getByRole('button', { name: 'Show details' }).click();
    await c.getByRole('button', { name: /Last \d+ steps?|Last step/ }).click();
    await c.getByRole('list', { name: 'Steps' }).waitFor({ timeout: stepTimeout });
    await result.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-task-result');
  });

  await check("the card opens the task's chat; its banner links back", async () => {
    if (!ctx.bgTask) throw new Error('not run: no background task');
    const c = taskCard(ctx.bgTask.id);
    await c.getByRole('link', { name: 'Open chat' }).click();
    await until("the task's chat to open", async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(ctx.bgTask.conversationId)}`);
    const banner = page.locator('#chat [data-task-banner]');
    await until('the banner to name the chat it came from', async () => ((await banner.textContent()) ?? '').replace(/\s+/g, ' ').includes('Background task from Notes check'));
    await page.locator('#chat [data-kind="user"]', { hasText: 'Summarise the notes file for me' }).waitFor({ timeout: stepTimeout });
    await page.locator('#chat [data-task-result]', { hasText: 'hello from e2e' }).waitFor({ timeout: stepTimeout });
    if ((await page.locator(`nav a[data-chat-id="${ctx.bgTask.conversationId}"]`).count()) !== 0) throw new Error('the task chat is in the chat list');
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-task-banner');
    await banner.getByRole('link', { name: 'Notes check' }).click();
    await until('the chat it came from to open again', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(ctx.parentChat)}`);
    await taskCard(ctx.bgTask.id).waitFor({ timeout: stepTimeout });
  });

  await check('"split this into three parts" runs three helpers as one group of cards, then answers', async () => {
    if (!ctx.bgTask) throw new Error('not run: no background task');
    const view = page.locator('#chat');
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Please split this into three parts');
    await box.press('Enter');
    const group = view.getByRole('group', { name: '3 helpers' });
    await group.waitFor({ timeout: stepTimeout });
    await until('three helper cards', async () => (await group.locator('[data-task-card]').count()) === 3);
    const titles = await group.locator('[data-task-card] h3').allTextContents();
    if (titles.join('|') !== 'Check part 1|Check part 2|Check part 3') throw new Error(`the cards are ${titles.join(', ')}`);
    await until('a helper at work', async () => (await group.locator('[data-task-card][data-status="running"]').count()) > 0);
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-helpers-working');
    await until('all three done', async () => (await group.locator('[data-task-card][data-status="done"]').count()) === 3, 40_000);
    await view.locator('[data-kind="assistant"]', { hasText: 'All 3 helpers are back' }).waitFor({ timeout: stepTimeout });
    if ((await view.locator('[data-task-card]').count()) !== 4) throw new Error(`${await view.locator('[data-task-card]').count()} cards in the chat, not 4`);
    const helpers = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.filter((t: any) => t.kind === 'helper' && t.parentConversationId === ctx.parentChat);
    if (helpers.length !== 3 || new Set(helpers.map((t: any) => t.groupId)).size !== 1) throw new Error(`${helpers.length} helpers on the server, or not one group`);
    await until('the reply in view', async () => view.locator('[data-kind="assistant"]', { hasText: 'All 3 helpers are back' }).isVisible());
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-helpers-done');
    await page.setViewportSize({ width: 720, height: 700 });
    await shoot(page, 'chat-helpers-narrow');
    await page.setViewportSize({ width: 1200, height: 820 });
    // A helper's chat says which part it is.
    const second = helpers.find((t: any) => t.title === 'Check part 2');
    await group.locator(`[data-task-card][data-task-id="${second.id}"]`).getByRole('link', { name: 'Open chat' }).click();
    const banner = page.locator('#chat [data-task-banner]');
    await until('the helper banner', async () => ((await banner.textContent()) ?? '').replace(/\s+/g, ' ').includes('Helper 2 of 3 for Notes check'));
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-helper-banner');
    await banner.getByRole('link', { name: 'Notes check' }).click();
    await until('back in the chat', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(ctx.parentChat)}`);
  });

  await check("a background task that needs an OK says so on its card; its chat asks, and Allow lets it finish", async () => {
    if (!ctx.bgTask) throw new Error('not run: no background task');
    const view = page.locator('#chat');
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Write a summary of the notes');
    await view.getByRole('button', { name: /Do it in the background/ }).click();
    await until('the composer to clear', async () => (await box.inputValue()) === '');
    const t = await until('the task on the server', async () =>
      (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.find((x: any) => x.text === 'Write a summary of the notes'),
    );
    const c = taskCard(t.id);
    await until('the card to need an OK', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'needs-you', 30_000);
    // The card asks inline, in the one ask layout, with the diff of the write; "Needs your OK" once.
    const inline = c.locator('[data-ask]');
    await inline.getByRole('button', { name: 'Deny' }).waitFor({ timeout: stepTimeout });
    await until('the inline question to show the diff of summary.txt', async () => ((await inline.locator('[data-ask-diff]').textContent()) ?? '').includes('summary.txt'));
    const okCount = (((await c.textContent()) ?? '').match(/Needs your OK/g) ?? []).length;
    if (okCount !== 1) throw new Error(`"Needs your OK" shows ${okCount} times on the card`);
    await page.mouse.move(0, 0);
    await shoot(page, 'chat-task-asking');
    await c.getByRole('link', { name: 'Open chat' }).click();
    await until("the task's chat to open", async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(t.conversationId)}`);
    const ask = page.locator('#chat [data-ask]');
    await until('the question to name the file', async () => ((await ask.textContent()) ?? '').includes('summary.txt'));
    await page.locator('#chat [data-task-banner]').getByRole('link', { name: 'Notes check' }).click();
    // Answered from the card in the chat it came from.
    await taskCard(t.id).locator('[data-ask]').getByRole('button', { name: 'Allow' }).click();
    await until('the file to be written', async () => existsSync(join(chatDir, 'summary.txt')));
    await until('the card to be done', async () => (await taskCard(t.id).getAttribute('data-status', { timeout: 1000 })) === 'done', 30_000);
    await page.locator(`#chat [data-task-result][data-task-id="${t.id}"]`).waitFor({ timeout: stepTimeout });
  });

  await check('Stop on a working card stops the task; the card says Stopped', async () => {
    if (!ctx.bgTask) throw new Error('not run: no background task');
    const view = page.locator('#chat');
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Summarise the notes, but slowly');
    await box.press('Control+Shift+Enter');
    await until('the composer to clear', async () => (await box.inputValue()) === '');
    const t = await until('the task on the server', async () =>
      (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.find((x: any) => x.text === 'Summarise the notes, but slowly'),
    );
    const c = taskCard(t.id);
    await until('the card to be working', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'running');
    await until('elapsed to tick', async () => /^[1-9]\d*s$/.test(((await c.locator('.elapsed').textContent()) ?? '').trim()));
    await c.getByRole('button', { name: 'Stop' }).click();
    await until('the card to say Stopped', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'stopped' && ((await c.locator('.chip').textContent()) ?? '').includes('Stopped'));
    if ((await c.getByRole('button', { name: 'Stop' }).count()) !== 0) throw new Error('Stop stayed on a stopped card');
  });

  await check('a task from a chat: the tasks page card opens its chat, app.open opens the chat it came from; app.compose and the palette send the chat composer', async () => {
    if (!ctx.bgTask) throw new Error('not run: no background task');
    const sockets: WebSocketRoute[] = [];
    await page.routeWebSocket(/\/api\/events\?ticket=[0-9a-f]+$/, (ws) => {
      ws.connectToServer();
      sockets.push(ws);
    });
    await page.reload();
    await page.getByRole('heading', { level: 1 }).first().waitFor({ timeout: stepTimeout });
    await until('the event stream to open', async () => sockets.length > 0);
    await visit(page, 'tasks');
    await card(page, 'Summarise the notes file for me').getByRole('link', { name: 'Open chat' }).waitFor({ timeout: stepTimeout });
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-from-chats');
    await card(page, 'Summarise the notes file for me').getByRole('link', { name: 'Open chat' }).click();
    await until("the task's chat to open", async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(ctx.bgTask.conversationId)}`);
    await visit(page, 'doctor');
    sockets[sockets.length - 1]?.send(JSON.stringify({ type: 'app.open', id: ctx.bgTask.id }));
    await until('the chat it came from to open', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(ctx.parentChat)}`);
    await until('its card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === ctx.bgTask.id);

    // The global shortcut and the palette send what the chat's composer holds.
    const view = page.locator('#chat');
    const box = view.getByRole('textbox', { name: 'Message' });
    await box.fill('Summarise the notes once more');
    await page.locator('nav a[href="#approvals"]').focus();
    sockets[sockets.length - 1]?.send(JSON.stringify({ type: 'app.compose' }));
    await until('app.compose to clear the composer', async () => (await box.inputValue()) === '');
    await box.fill('Summarise the notes via the palette');
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('in the background');
    await until('the action to be offered', async () => ((await palette(page).getByRole('option').first().textContent()) ?? '').includes('Do it in the background'));
    await page.keyboard.press('Enter');
    await until('the palette to clear the composer', async () => (await box.inputValue()) === '');
    if ((await page.evaluate(() => location.hash)) !== `#chat/${encodeURIComponent(ctx.parentChat)}`) throw new Error('sending left the chat');
    const sent = await until('both tasks on the server, from this chat', async () => {
      const list = (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.filter(
        (t: any) => t.parentConversationId === ctx.parentChat && (t.text === 'Summarise the notes once more' || t.text === 'Summarise the notes via the palette'),
      );
      return list.length === 2 ? list : null;
    });
    for (const t of sent) await taskCard(t.id).waitFor({ timeout: stepTimeout });
    await until('both done', async () => {
      for (const t of sent) if ((await taskCard(t.id).getAttribute('data-status', { timeout: 1000 })) !== 'done') return false;
      return true;
    }, 30_000);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
  });
}

/** Past the first 100 chats. */
export async function paging(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('past the first 100 chats: the sidebar loads older ones as it scrolls, and the palette finds one not loaded', async () => {
    // The oldest of 130 chats, so the sidebar's first page leaves it out.
    const needle = await api(origin, ctx.token, 'POST', '/api/conversations', { title: 'Quokka migration notes' });
    if (needle.status !== 201) throw new Error(`creating the chat answered ${needle.status}`);
    for (let i = 0; i < 130; i++) {
      const made = await api(origin, ctx.token, 'POST', '/api/conversations', { title: `Scale chat ${i}` });
      if (made.status !== 201) throw new Error(`creating chat ${i} answered ${made.status}`);
    }
    const first = (await api(origin, ctx.token, 'GET', '/api/conversations')).json;
    if (first.conversations.length !== 100 || first.next === '' || first.conversations.some((c: any) => c.id === needle.json.id)) {
      throw new Error(`the first page holds ${first.conversations.length} chats (next ${JSON.stringify(first.next)}), the oldest among them: the check needs more chats`);
    }
    await page.reload();
    const list = page.locator('nav section.chats');
    const needleLink = list.locator(`a[data-chat-id="${needle.json.id}"]`);
    await list.locator('a[data-chat-id]').first().waitFor({ timeout: stepTimeout });
    const shown = await list.locator('a[data-chat-id]').count();
    if (shown > 100 + 20) throw new Error(`the sidebar shows ${shown} chats before it is scrolled`);
    if ((await needleLink.count()) !== 0) throw new Error('the oldest chat is in the sidebar before it is scrolled to');

    // The palette asks the server: the chat is found though no page holds it, and Enter opens it.
    await page.keyboard.press('Control+K');
    await palette(page).waitFor({ timeout: stepTimeout });
    await page.keyboard.type('quokka migration');
    await until('the palette to find the chat', async () => ((await palette(page).getByRole('option').first().textContent()) ?? '').includes('Quokka migration notes'));
    await page.keyboard.press('Enter');
    await until('the chat to open', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(needle.json.id)}`);

    // Scrolling the chat list to its end loads the older chats until that one shows.
    await visit(page, 'tasks');
    await until('scrolling the chat list to reach the oldest chat', async () => {
      if ((await needleLink.count()) === 1) return true;
      await list.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
      return false;
    }, 30_000);
    await until('every chat listed', async () => (await list.getByRole('button', { name: /older chats/ }).count()) === 0);
    await needleLink.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await shoot(page, 'sidebar-older-chats');
    await list.evaluate((el) => el.scrollTo({ top: 0 }));
  });
}
