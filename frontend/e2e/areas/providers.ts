// Providers: an OpenAI-compatible server, and the real coding-agent CLIs.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { needsProviders } from '../shared/chat';
import { stepTimeout, temp } from '../shared/env';
import { api, shoot, until, visit } from '../shared/page';
import { check } from '../shared/results';
import { conch, startAgentServers, startServer, stopServer, tokenOf } from '../shared/server';
import type { Suite } from '../shared/suite';

/** Connecting an OpenAI-compatible server on the Providers page. */
export async function customServer(ctx: Suite): Promise<void> {
  const { page, origin, model } = ctx;
  await check('the providers page connects a custom OpenAI-compatible server', async () => {
    needsProviders(ctx);
    await visit(page, 'providers');
    const form = page.getByRole('form', { name: 'Connect a provider' });
    await form.getByRole('radio', { name: 'Custom (OpenAI-compatible)' }).click();
    await form.getByLabel('URL').fill('not a url');
    await form.getByRole('button', { name: 'Connect' }).click();
    await form.getByText('Give the full URL, starting with http:// or https://.').waitFor({ timeout: stepTimeout });
    await form.getByLabel('Name').fill('E2E Model');
    await form.getByLabel('URL').fill(model.url);
    await form.getByLabel('API key').fill('sk-e2e-secret');
    await form.getByLabel('Model').fill('test-model');
    await form.getByRole('button', { name: 'Connect' }).click();
    const cardEl = page.locator('[data-provider="e2e-model"]');
    await until('the provider to be listed ready', async () => (await cardEl.getAttribute('data-ready', { timeout: 1000 })) === 'true');
    if (((await page.content()) ?? '').includes('sk-e2e-secret')) throw new Error('the key is shown back on the page');
    if ((await form.getByLabel('API key').inputValue()) !== '') throw new Error('the key field kept the key');
    // Edit in place: Esc leaves it as it was; Save without a key keeps the key.
    await cardEl.getByRole('button', { name: 'Edit E2E Model' }).click();
    const editForm = cardEl.getByRole('form', { name: 'Edit E2E Model' });
    if ((await editForm.getByLabel('Name').inputValue()) !== 'E2E Model' || (await editForm.getByLabel('API key').getAttribute('placeholder')) !== 'Leave empty to keep the key') throw new Error('the edit form is not filled in');
    await editForm.getByLabel('Model').press('Escape');
    await until('Esc to close the form', async () => (await editForm.count()) === 0);
    await cardEl.getByRole('button', { name: 'Edit E2E Model' }).click();
    await editForm.getByRole('button', { name: 'Save' }).click();
    await cardEl.getByText('Saved.').waitFor({ timeout: stepTimeout });
    const after = (await api(origin, ctx.token, 'GET', '/api/providers/e2e-model')).json;
    if (!after.keySet || after.models.default !== 'test-model' || after.name !== 'E2E Model') throw new Error(`after the edit: ${JSON.stringify(after)}`);
    await page.mouse.move(0, 0);
    await shoot(page, 'providers');
  });
}

/** The real coding-agent CLIs as delegates. */
export async function agents(ctx: Suite): Promise<void> {
  const { page, model } = ctx;
  await check('a delegate hands its parts to the real Claude Code, Codex and Gemini CLI; the three cards say by whom', async () => {
    const agents = await startAgentServers();
    try {
      const s = conch.child;
      stopServer();
      await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
      // A Conch of its own, whose PATH and environment hold the CLIs.
      const link = await startServer(temp('conch-e2e-agents-home-'), '127.0.0.1:0', agents.env);
      const o = new URL(link).origin;
      const tk = tokenOf(link);
      await page.goto(link);
      const listed = await until('the three CLIs to be found ready', async () => {
        const ps = (await api(o, tk, 'GET', '/api/providers')).json?.providers ?? [];
        const ready = ps.filter((p: any) => p.category === 'coding-agent' && p.ready).map((p: any) => p.name);
        return ready.length === 3 ? ready : null;
      }, 30_000);
      const made = await api(o, tk, 'PUT', '/api/providers/e2e-model', { name: 'E2E Model', kind: 'openai', baseUrl: model.url, model: 'test-model' });
      if (made.status !== 200) throw new Error(`connecting the model answered ${made.status}: ${JSON.stringify(made.json)}`);
      const dir = temp('conch-e2e-agents-work-');
      const c = await api(o, tk, 'POST', '/api/conversations', { title: 'Across the agents', provider: made.json.id, model: 'test-model', mode: 'auto', cwd: dir });
      if (c.status !== 201) throw new Error(`creating the chat answered ${c.status}: ${JSON.stringify(c.json)}`);
      await page.goto(`${o}/#chat/${encodeURIComponent(c.json.id)}`);
      const view = page.locator('#chat');
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Split it across the agents');
      await box.press('Enter');
      const group = view.getByRole('group', { name: '3 helpers' });
      await group.waitFor({ timeout: stepTimeout });
      await until('all three done', async () => (await group.locator('[data-task-card][data-status="done"]').count()) === 3, 90_000);
      for (const who of ['Claude Code', 'Codex', 'Gemini CLI']) {
        if ((await group.locator('[data-task-card]', { hasText: `by ${who}` }).count()) !== 1) throw new Error(`no card says "by ${who}" (found ${listed.join(', ')})`);
      }
      await view.locator('[data-kind="assistant"]', { hasText: 'each wrote their file' }).waitFor({ timeout: stepTimeout });
      for (const [file, by] of (([['tests.txt', 'claude'], ['docs.txt', 'codex'], ['notes.txt', 'gemini']]) as [string, string][])) {
        const text = readFileSync(join(dir, file), 'utf8');
        if (text !== `written by ${by}\n`) throw new Error(`${file} says ${JSON.stringify(text)}`);
      }
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-helpers-agents');
    } finally {
      agents.close();
    }
  });
}
