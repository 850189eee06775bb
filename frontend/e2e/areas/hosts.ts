// Settings → Hosts, and a command sent to a host: first one nothing answers
// at (loopback port 1), then a real one (an sshd on loopback logging in as
// a Unix user of its own: backend/testrig/sshd/sshhost), whose key is
// accepted on the page, whose command streams here, and which goes away
// and comes back while its command runs on.

import { layoutProblems } from '../layout';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stepTimeout, temp } from '../shared/env';
import { api, send, shoot, until, visit, waitStatus } from '../shared/page';
import { check } from '../shared/results';
import { startAgentServers, startSSHHost } from '../shared/server';
import type { Suite } from '../shared/suite';

/** Adding, testing and removing a host; sending a command to one. */
export async function hosts(ctx: Suite): Promise<void> {
  const { page, origin } = ctx;
  await check('hosts: one is added and tested with the keyboard, and says why it cannot be reached', async () => {
    await visit(page, 'settings');
    const form = page.getByRole('form', { name: 'Add a host' });
    await form.scrollIntoViewIfNeeded();
    await form.getByLabel('Name').fill('Build box');
    await form.getByLabel('Target').fill('conch@127.0.0.1:1');
    await form.getByLabel('Target').press('Enter');
    const row = page.locator('[data-host="build-box"]');
    await row.waitFor({ timeout: stepTimeout });
    await until('the new host to say it is not tested', async () => (await row.locator('[data-status]').getAttribute('data-status')) === 'new');
    await row.getByRole('button', { name: 'Test connection' }).focus();
    await page.keyboard.press('Enter');
    await until('the test to find it unreachable', async () => (await row.locator('[data-status]').getAttribute('data-status')) === 'unreachable');
    const said = (await row.textContent()) ?? '';
    if (!said.includes('Unreachable') || !/could not reach|refused/i.test(said)) throw new Error(`the host says ${JSON.stringify(said)}`);
    const listed = await api(origin, ctx.token, 'GET', '/api/hosts');
    if (listed.json?.hosts?.length !== 1 || listed.json.hosts[0].status !== 'unreachable') throw new Error(`GET /api/hosts: ${JSON.stringify(listed.json)}`);
    // Its limits, changed from the keyboard; one out of range says why and changes nothing.
    await row.getByRole('button', { name: 'Change the limits of Build box' }).click();
    const limits = row.getByRole('form', { name: 'Limits of Build box' });
    await limits.getByLabel('Background').fill('0');
    await limits.getByLabel('Background').press('Enter');
    await row.getByText('Use whole numbers from 1 to 64.').waitFor({ timeout: stepTimeout });
    await limits.getByLabel('Background').fill('2');
    await limits.getByLabel('Helpers').fill('5');
    await limits.getByLabel('Helpers').press('Enter');
    await until('the new limits to be shown', async () => ((await row.textContent()) ?? '').includes('2 background tasks, 5 helpers'));
    const changed = (await api(origin, ctx.token, 'GET', '/api/hosts/build-box')).json;
    if (changed?.limits?.background !== 2 || changed.limits.helper !== 5) throw new Error(`the host's limits are ${JSON.stringify(changed?.limits)}`);
    await page.mouse.move(0, 0);
    await shoot(page, 'settings-hosts');
    await page.setViewportSize({ width: 900, height: 700 });
    await row.scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    const cut = await layoutProblems(page);
    await shoot(page, 'settings-hosts-900');
    await page.setViewportSize({ width: 1200, height: 820 });
    if (cut.length > 0) throw new Error(`at 900 px: ${cut.join(' | ')}`);
  });

  await check('hosts: a command sent to a host out of reach fails at once, saying so, and its card names the host', async () => {
    await visit(page, 'tasks');
    const where = page.getByLabel('Where');
    await until('the composer to offer the host', async () => (await where.locator('option[value="build-box"]').count()) === 1);
    await where.selectOption('build-box');
    const folder = page.getByRole('textbox', { name: 'Folder' });
    if ((await folder.getAttribute('placeholder')) !== 'Home folder on Build box') throw new Error(`the folder says ${await folder.getAttribute('placeholder')}`);
    await folder.fill('src/app');
    await page.getByRole('textbox', { name: 'Shell command' }).fill('echo on-the-box');
    await page.getByText('Use a full path there, or one starting with ~/ for your home folder on Build box.').waitFor({ timeout: stepTimeout });
    await folder.fill('~/src/app');
    await send(page, 'echo on-the-box', 'auto');
    const c = await waitStatus(page, 'echo on-the-box', 'failed', "Didn't finish");
    await until('the reason to name the host', async () => ((await c.textContent()) ?? '').includes('Build box (conch@127.0.0.1:1) could not be reached, so nothing ran there'));
    const list = await api(origin, ctx.token, 'GET', '/api/tasks?group=finished&q=on-the-box');
    const t = list.json?.tasks?.find((x: any) => x.text === 'echo on-the-box');
    if (!t || t.host !== 'build-box' || t.cwd !== '~/src/app') throw new Error(`the task is ${JSON.stringify(t)}`);
    const unfold = c.getByRole('button', { name: 'Show details' });
    if ((await unfold.count()) > 0) await unfold.click();
    await until('the card to name where it ran', async () => ((await c.locator('[data-folder]').textContent()) ?? '').replace(/\s+/g, ' ').trim() === 'on Build box:~/src/app');
    await page.mouse.move(0, 0);
    await shoot(page, 'tasks-host');
    await page.setViewportSize({ width: 900, height: 700 });
    await page.mouse.move(0, 0);
    const cut = await layoutProblems(page);
    await shoot(page, 'tasks-host-900');
    await page.setViewportSize({ width: 1200, height: 820 });
    if (cut.length > 0) throw new Error(`at 900 px: ${cut.join(' | ')}`);
    await where.selectOption('');
    await folder.fill('');
    await api(origin, ctx.token, 'DELETE', `/api/tasks/${t.id}`);
  });

  await check('hosts: Remove asks once more, then the host is gone here and from the composer', async () => {
    await visit(page, 'settings');
    const row = page.locator('[data-host="build-box"]');
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.getByRole('button', { name: 'Press again to remove' }).click();
    await until('the host to go', async () => (await row.count()) === 0);
    await visit(page, 'tasks');
    if ((await page.getByLabel('Where').count()) !== 0) throw new Error('the composer still offers a place with no host left');
  });

  await check('hosts: a real host: its key is accepted here, a command runs there and streams, and while the host is away its card says so and the command carries on', async () => {
    const h = await startSSHHost();
    if (h.skip) {
      console.log(`      (a real host was not started: ${h.skip})`);
      return;
    }
    try {
      const set = await api(origin, ctx.token, 'PATCH', '/api/preferences', { sshConfig: h.config });
      if (set.status !== 200) throw new Error(`setting the ssh config answered ${set.status}`);
      await visit(page, 'settings');
      const form = page.getByRole('form', { name: 'Add a host' });
      await form.getByLabel('Name').fill('Real box');
      await form.getByLabel('Target').fill(h.alias);
      await form.getByLabel('Target').press('Enter');
      const row = page.locator('[data-host="real-box"]');
      await row.waitFor({ timeout: stepTimeout });
      await row.getByRole('button', { name: 'Test connection' }).click();
      await until('its unknown key to be shown', async () => (await row.locator('[data-status]').getAttribute('data-status')) === 'unknown-key');
      const shown = ((await row.locator('.fp').textContent()) ?? '').trim();
      if (shown !== h.fingerprint) throw new Error(`the page shows the key ${shown}, the host's is ${h.fingerprint}`);
      await row.scrollIntoViewIfNeeded();
      await page.mouse.move(0, 0);
      await shoot(page, 'settings-hosts-key');
      await row.getByRole('button', { name: 'Accept key' }).click();
      await until('the key to be accepted', async () => (await row.locator('[data-status]').getAttribute('data-status')) === 'new');
      await row.getByRole('button', { name: 'Test connection' }).click();
      await until('the host to be ready', async () => (await row.locator('[data-status]').getAttribute('data-status')) === 'ready');
      if (!((await row.textContent()) ?? '').includes(`${h.user} in ${h.home}`)) throw new Error(`the host does not say whom Conch signs in as: ${await row.textContent()}`);

      await visit(page, 'tasks');
      await page.getByLabel('Where').selectOption('real-box');
      // At most 60 characters: the card's title is the whole command.
      const command = 'id -un; for i in $(seq 30); do echo line $i; sleep .2; done';
      await send(page, command, 'auto');
      const c = await waitStatus(page, command, 'running', 'Working');
      await until('its output to stream here', async () => ((await c.locator('pre').textContent()) ?? '').includes('line 2'));
      await h.down();
      const away = c.locator('[data-away]');
      await until('the card to say its host is away', async () => /^Real box unreachable since .+ — it carries on there$/.test(((await away.textContent({ timeout: 500 })) ?? '').trim()));
      await page.mouse.move(0, 0);
      await shoot(page, 'tasks-host-away');
      await h.up();
      await waitStatus(page, command, 'done', 'Done');
      if ((await away.count()) !== 0) throw new Error('the card still says its host is away');
      const list = await api(origin, ctx.token, 'GET', '/api/tasks?group=finished&q=line');
      const t = list.json?.tasks?.find((x: any) => x.text === command);
      let want = `${h.user}\n`;
      for (let i = 1; i <= 30; i++) want += `line ${i}\n`;
      const res = await fetch(`${origin}/api/tasks/${t?.id}/output`, { headers: { Authorization: `Bearer ${ctx.token}` } });
      const got = await res.text();
      if (got !== want) throw new Error(`its output here is ${JSON.stringify(got)}`);
      await api(origin, ctx.token, 'DELETE', `/api/tasks/${t.id}`);
      await api(origin, ctx.token, 'DELETE', '/api/hosts/real-box');
      await page.getByLabel('Where').waitFor({ state: 'detached', timeout: stepTimeout });
    } finally {
      h.close();
      await api(origin, ctx.token, 'PATCH', '/api/preferences', { sshConfig: '' });
    }
  });

  await check('hosts: a chat sends a background task to Claude Code on a real host; it asks here, Allow on its card lets it write there as the host user, and its chat here says what it said there; a new chat made on the host talks there', async () => {
    const h = await startSSHHost();
    if (h.skip) {
      console.log(`      (a real host was not started: ${h.skip})`);
      return;
    }
    const agents = await startAgentServers();
    try {
      await h.claude(agents.env);
      await api(origin, ctx.token, 'PATCH', '/api/preferences', { sshConfig: h.config });
      const put = await api(origin, ctx.token, 'PUT', '/api/hosts/agent-box', { name: 'Agent box', target: h.alias });
      if (put.status !== 200 && put.status !== 201) throw new Error(`adding the host answered ${put.status}: ${JSON.stringify(put.json)}`);
      const first = await api(origin, ctx.token, 'POST', '/api/hosts/agent-box/test');
      await api(origin, ctx.token, 'POST', '/api/hosts/agent-box/accept-key', { fingerprint: first.json?.host?.fingerprint });
      const tested = await api(origin, ctx.token, 'POST', '/api/hosts/agent-box/test');
      if (tested.json?.host?.status !== 'ready' || !(tested.json.host.providers ?? []).some((p: any) => p.id === 'claude')) {
        throw new Error(`the host after its test: ${JSON.stringify(tested.json)}`);
      }
      const made = await api(origin, ctx.token, 'POST', '/api/conversations', { title: 'On the agent box', provider: 'shell', mode: 'ask', cwd: temp('conch-e2e-hostchat-') });
      if (made.status !== 201) throw new Error(`making the chat answered ${made.status}`);
      await page.goto(`${origin}/#chat/${encodeURIComponent(made.json.id)}`);
      const view = page.locator('#chat');
      const where = view.getByLabel('In the background on');
      await until('the composer to offer Claude Code on the host', async () => (await where.locator('option', { hasText: 'Agent box · Claude Code' }).count()) === 1);
      await where.selectOption({ label: 'Agent box · Claude Code' });
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('WRITE host.txt');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-background-host');
      await view.getByRole('button', { name: /Do it on Agent box/ }).waitFor({ timeout: stepTimeout });
      await box.press(process.platform === 'darwin' ? 'Meta+Shift+Enter' : 'Control+Shift+Enter');
      await until('the composer to clear', async () => (await box.inputValue()) === '');
      const t = await until('the task on the server', async () => (await api(origin, ctx.token, 'GET', '/api/tasks')).json.tasks.find((x: any) => x.text === 'WRITE host.txt'));
      if (t.host !== 'agent-box' || t.provider !== 'claude-code' || t.cwd !== '~') throw new Error(`the task is ${JSON.stringify(t)}`);
      const c = view.locator(`[data-task-card][data-task-id="${t.id}"]`);
      await until('its card to need an OK', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'needs-you', 60_000);
      if (existsSync(join(h.home, 'host.txt'))) throw new Error('host.txt was written before it was allowed');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-task-host-asking');
      await c.locator('[data-ask]').getByRole('button', { name: 'Allow' }).click();
      await until('its card to be done', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'done', 60_000);
      const written = readFileSync(join(h.home, 'host.txt'), 'utf8');
      if (written !== 'written by claude\n') throw new Error(`host.txt on the host says ${JSON.stringify(written)}`);
      await c.getByRole('link', { name: 'Open chat' }).click();
      await until("the task's chat to open", async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(t.conversationId)}`);
      await until('its chat to say what works where', async () => ((await page.locator('#chat [data-host-controls]').textContent()) ?? '').trim() === 'Claude Code on Agent box · Ask mode');
      const folder = ((await page.locator('#chat .folder').textContent()) ?? '').trim();
      if (folder !== 'Agent box:~') throw new Error(`its folder reads ${JSON.stringify(folder)}`);
      await page.locator('#chat [data-kind="assistant"]', { hasText: 'Wrote host.txt.' }).waitFor({ timeout: stepTimeout });
      const placeholder = await page.locator('#chat').getByRole('textbox', { name: 'Message' }).getAttribute('placeholder');
      if (placeholder !== 'This task works on Agent box; its turns run there.') throw new Error(`its composer says ${JSON.stringify(placeholder)}`);
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-task-on-host');
      await page.setViewportSize({ width: 900, height: 700 });
      await page.mouse.move(0, 0);
      const cut = await layoutProblems(page);
      await shoot(page, 'chat-task-on-host-900');
      await page.setViewportSize({ width: 1200, height: 820 });
      if (cut.length > 0) throw new Error(`at 900 px: ${cut.join(' | ')}`);
      await api(origin, ctx.token, 'DELETE', `/api/tasks/${t.id}`);

      // A chat of the person's on the host: made here, every turn there.
      await page.locator('nav button', { hasText: 'New chat' }).click();
      await view.getByRole('heading', { name: 'New chat', level: 1 }).waitFor({ timeout: stepTimeout });
      await view.getByLabel('Where').selectOption({ label: 'Agent box' });
      await until('the provider to be the host’s CLI', async () => ((await view.getByLabel('Provider and model').locator('option:checked').textContent()) ?? '') === 'Claude Code on Agent box');
      const folderBox = view.getByRole('textbox', { name: 'Folder' });
      if ((await folderBox.getAttribute('placeholder')) !== 'Home folder on Agent box') throw new Error(`the folder says ${await folderBox.getAttribute('placeholder')}`);
      await view.getByLabel('Mode', { exact: true }).selectOption('ask');
      const msg = view.getByRole('textbox', { name: 'Message' });
      await msg.fill('WRITE chat.txt');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-new-on-host');
      await msg.press('Enter');
      await until('the chat to be made', async () => (await page.evaluate(() => location.hash)).startsWith('#chat/'));
      const ask = view.locator('[data-ask]');
      await ask.getByRole('button', { name: 'Allow' }).waitFor({ timeout: 60_000 });
      if (existsSync(join(h.home, 'chat.txt'))) throw new Error('chat.txt was written before it was allowed');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-on-host-asking');
      await ask.getByRole('button', { name: 'Allow' }).click();
      await view.locator('[data-kind="assistant"]', { hasText: 'Wrote chat.txt.' }).waitFor({ timeout: 60_000 });
      const inChat = readFileSync(join(h.home, 'chat.txt'), 'utf8');
      if (inChat !== 'written by claude\n') throw new Error(`chat.txt on the host says ${JSON.stringify(inChat)}`);
      await until('its controls to say where it works', async () => ((await view.locator('[data-host-controls]').textContent()) ?? '').trim() === 'Claude Code on Agent box');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-on-host');
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.mouse.move(0, 0);
      const wide = await layoutProblems(page);
      await shoot(page, 'chat-on-host-1440');
      if (wide.length > 0) throw new Error(`at 1440 px: ${wide.join(' | ')}`);
      await page.setViewportSize({ width: 900, height: 700 });
      await page.mouse.move(0, 0);
      const cut2 = await layoutProblems(page);
      await shoot(page, 'chat-on-host-900');
      await page.setViewportSize({ width: 1200, height: 820 });
      if (cut2.length > 0) throw new Error(`at 900 px: ${cut2.join(' | ')}`);

      // A delegate's part on the host, in a worktree of ~/repo there, and
      // its branch fetched into the clone here.
      await h.repo();
      const trust = join(temp('conch-e2e-gitcfg-'), 'gitconfig');
      writeFileSync(trust, '[safe]\n\tdirectory = *\n');
      const git = (args: string[]) => execFileSync('git', args, { env: { ...process.env, GIT_CONFIG_GLOBAL: trust }, encoding: 'utf8' }).trim();
      const clone = join(temp('conch-e2e-clone-'), 'repo');
      git(['clone', '-q', join(h.home, 'repo'), clone]);
      const head = git(['-C', clone, 'rev-parse', 'HEAD']);
      const model = await api(origin, ctx.token, 'PUT', '/api/providers/e2e-box-model', { name: 'Box model', kind: 'openai', baseUrl: ctx.model.url, model: 'test-model' });
      if (model.status !== 200) throw new Error(`connecting the model answered ${model.status}: ${JSON.stringify(model.json)}`);
      const split = await api(origin, ctx.token, 'POST', '/api/conversations', { title: 'Split onto the box', provider: model.json.id, model: 'test-model', mode: 'auto', cwd: clone });
      await page.goto(`${origin}/#chat/${encodeURIComponent(split.json.id)}`);
      const splitBox = view.getByRole('textbox', { name: 'Message' });
      await splitBox.fill('split onto the agent box');
      await splitBox.press('Enter');
      const helper = view.locator('[data-task-card]', { hasText: 'On the box' });
      await until('the helper on the box to be done', async () => (await helper.getAttribute('data-status', { timeout: 1000 })) === 'done', 90_000);
      await view.locator('[data-kind="assistant"]', { hasText: 'The helper on the agent box is back.' }).waitFor({ timeout: stepTimeout });
      const details = helper.getByRole('button', { name: 'Show details' });
      if ((await details.count()) > 0) await details.click();
      const fetchButton = helper.getByRole('button', { name: 'Fetch to this computer' });
      await fetchButton.waitFor({ timeout: stepTimeout });
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-helper-on-host');
      await fetchButton.click();
      const fetchedLine = helper.locator('[data-fetched]');
      await until('the card to say what was fetched', async () => /^Fetched into .+repo \(0 commits\); nothing was merged\.$/.test(((await fetchedLine.textContent({ timeout: 500 })) ?? '').trim()));
      const ht = (await api(origin, ctx.token, 'GET', `/api/tasks?conversation=${split.json.id}`)).json.tasks[0];
      if (git(['-C', clone, 'rev-parse', '--verify', '-q', `refs/heads/${ht.worktree.branch}`]) === '') throw new Error('the branch is not in the clone here');
      if (git(['-C', clone, 'rev-parse', 'HEAD']) !== head) throw new Error('the clone here moved: something was merged');
      if (!existsSync(join(ht.worktree.path, 'box.txt'))) throw new Error(`box.txt is not in the worktree on the host (${ht.worktree.path})`);
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-helper-on-host-fetched');
      await page.setViewportSize({ width: 1440, height: 900 });
      await page.mouse.move(0, 0);
      const wideFetch = await layoutProblems(page);
      await shoot(page, 'chat-helper-on-host-fetched-1440');
      await page.setViewportSize({ width: 900, height: 700 });
      await page.mouse.move(0, 0);
      const narrowFetch = await layoutProblems(page);
      await shoot(page, 'chat-helper-on-host-fetched-900');
      await page.setViewportSize({ width: 1200, height: 820 });
      if (wideFetch.length + narrowFetch.length > 0) throw new Error(`the fetched card: ${[...wideFetch, ...narrowFetch].join(' | ')}`);

      // The person's OK for an API model on the host: given in Settings,
      // then offered where a chat sends work away.
      await visit(page, 'settings');
      const hostRow = page.locator('[data-host="agent-box"]');
      await hostRow.scrollIntoViewIfNeeded();
      const allowed = hostRow.getByRole('group', { name: 'API models allowed on Agent box' });
      await until('the host to offer its OK for the model', async () => (await allowed.getByLabel('Box model').count()) === 1 || (console.log('      row:', (await hostRow.textContent())?.replace(/\s+/g, ' ')), false));
      await allowed.getByLabel('Box model').check();
      await until('the OK to be saved', async () => ((await api(origin, ctx.token, 'GET', '/api/hosts/agent-box')).json?.models ?? []).includes(model.json.id));
      await page.mouse.move(0, 0);
      await shoot(page, 'settings-host-models');
      await page.goto(`${origin}/#chat/${encodeURIComponent(split.json.id)}`);
      await until('the composer to offer the model on the host', async () => (await view.getByLabel('In the background on').locator('option', { hasText: 'Agent box · Box model' }).count()) === 1);
    } finally {
      agents.close();
      h.close();
      await api(origin, ctx.token, 'DELETE', '/api/hosts/agent-box');
      await api(origin, ctx.token, 'PATCH', '/api/preferences', { sshConfig: '' });
    }
  });
}
