// The first run: the welcome, what Conch found, and a shell task to try.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { frontend, stepTimeout } from '../shared/env';
import { api, shoot, until } from '../shared/page';
import { check } from '../shared/results';
import type { Suite } from '../shared/suite';

/** The first run: the sign-in link opens on the welcome. */
export async function firstRun(ctx: Suite): Promise<void> {
  const { page, origin, url } = ctx;
  await check('opens the sign-in link on the welcome: what Conch does, what it found, a shell task to try', async () => {
    await page.goto(url);
    const welcome = page.locator('#welcome');
    await welcome.getByRole('heading', { name: 'Welcome to Conch', level: 1 }).waitFor({ timeout: stepTimeout });
    if ((await page.title()) !== 'Conch') throw new Error(`window title is "${await page.title()}"`);
    await welcome.getByText('Conch does work for you in the background').waitFor({ timeout: stepTimeout });
    // What it found, as GET /api/found says it: this home's environment has no Ollama at its address.
    const found = (await api(origin, ctx.token, 'GET', '/api/found')).json;
    if (!found || typeof found.ollama?.address !== 'string') throw new Error(`GET /api/found: ${JSON.stringify(found)}`);
    const ollama = welcome.locator('[data-found="ollama"]');
    await ollama.waitFor({ timeout: stepTimeout });
    if (!((await ollama.textContent()) ?? '').includes(found.ollama.address)) throw new Error(`the Ollama line says "${await ollama.textContent()}"`);
    for (const cli of found.clis) await welcome.locator(`[data-found="cli-${cli.id}"]`).waitFor({ timeout: stepTimeout });
    await welcome.locator('[data-found="shell"][data-ready="true"]').waitFor({ timeout: stepTimeout });
    await page.mouse.move(0, 0);
    await shoot(page, 'welcome');
    for (const size of [{ width: 1440, height: 900 }, { width: 900, height: 700 }]) {
      await page.setViewportSize(size);
      await shoot(page, `welcome-${size.width}`);
    }
    await page.setViewportSize({ width: 1200, height: 820 });
    await welcome.getByRole('button', { name: 'Try a shell task' }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor({ timeout: stepTimeout });
    const box = page.getByRole('textbox', { name: 'Shell command' });
    await until('the example command in the composer', async () => (await box.inputValue()).includes('Hello from Conch'));
    await until('the composer to have the focus', async () => box.evaluate((el) => el === document.activeElement));
    await box.fill('');
    await page.getByText('Nothing running. Type a command below and press').waitFor({ timeout: stepTimeout });
    const served = await (await fetch(`${origin}/`, { headers: { Authorization: `Bearer ${ctx.token}` } })).text();
    const built = existsSync(join(frontend, 'dist/index.html')) ? readFileSync(join(frontend, 'dist/index.html'), 'utf8') : '';
    if (built && served.trim() !== built.trim()) console.log('      warning: the binary embeds another frontend build than frontend/dist; rebuild it');
    await shoot(page, 'empty');
  });
}
