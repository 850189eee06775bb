// The session: the sign-in, a server restart, a page on another port, and a quiet console.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { stepTimeout } from '../shared/env';
import { api, card, shoot, until, waitStatus } from '../shared/page';
import { check } from '../shared/results';
import { conch, startOtherPortServer, startServer, stopServer, tokenOf } from '../shared/server';
import type { Suite } from '../shared/suite';

/** A page on another port gets nothing of the sign-in. */
export async function otherPort(ctx: Suite): Promise<void> {
  const { page, context, origin } = ctx;
  await check('a page on another loopback port gets no credential and cannot frame the app', async () => {
    const other = await startOtherPortServer(origin);
    try {
      const evil = await context.newPage();
      await evil.goto(`${other.origin}/`);
      await until('the other page to try the API', async () => (await evil.evaluate(() => (window as any).apiStatus)) !== 'pending');
      // The browser sent the other server nothing of the sign-in: no cookie, no token anywhere.
      for (const r of other.requests) {
        const sent = JSON.stringify(r.headers) + r.url;
        if (sent.includes(ctx.token)) throw new Error(`the other server received the token: ${sent}`);
        if (r.headers.cookie) throw new Error(`the other server received cookies: ${r.headers.cookie}`);
      }
      const seen = await evil.evaluate(() => ({ cookie: document.cookie, storage: JSON.stringify(sessionStorage) }));
      if (seen.cookie !== '' || seen.storage.includes(ctx.token)) throw new Error(`the other page can read ${JSON.stringify(seen)}`);
      // Its API call got nothing: refused by the browser (no CORS) or 401.
      const status = await evil.evaluate(() => (window as any).apiStatus);
      if (status === '200') throw new Error('the other page read the task list');
      // The app refuses to be framed: the browser shows its error page in the frame instead.
      const framed = evil.frames().find((f) => f !== evil.mainFrame());
      if (!framed) throw new Error('no frame on the other page');
      await until('the frame to settle', async () => framed.url() !== '' && framed.url() !== 'about:blank');
      const rendered = await framed.evaluate(() => document.querySelector('#app') !== null).catch(() => false);
      if (rendered) throw new Error(`the app rendered inside another page's frame (${framed.url()})`);
      await shoot(evil, 'other-port');
      await evil.close();
      // The app itself still works after a reload: signed in from this tab's storage, live over a new stream.
      await page.reload();
      await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor({ timeout: stepTimeout });
      const made = await api(origin, ctx.token, 'POST', '/api/tasks', { text: 'echo after-reload', options: { provider: 'shell', mode: 'auto' } });
      if (made.status !== 201) throw new Error(`creating a task answered ${made.status}`);
      await waitStatus(page, 'echo after-reload', 'done', 'Done');
      if (page.url().includes('token')) throw new Error(`the token stayed in the address bar: ${page.url()}`);
    } finally {
      other.close();
    }
  });
}

/** A restarted server is reconnected to; a sign-in no longer valid asks again. */
export async function restart(ctx: Suite): Promise<void> {
  const { page, origin, home, serverEnv } = ctx;
  await check('reconnects after the server restarts and reloads the list', async () => {
    const port = new URL(origin).port;
    const s = conch.child;
    stopServer();
    await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
    const banner = page.getByRole('alert').filter({ hasText: "Can't reach Conch" });
    await banner.waitFor({ timeout: stepTimeout });
    await shoot(page, 'offline');
    await startServer(home, `127.0.0.1:${port}`, serverEnv);
    const res = await fetch(`${origin}/api/tasks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ctx.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: 'echo after-restart', options: { provider: 'shell', mode: 'auto' } }),
    });
    if (res.status !== 201) throw new Error(`creating a task over the API answered ${res.status}`);
    await waitStatus(page, 'echo after-restart', 'done', 'Done');
    await until('the offline banner to go', async () => (await banner.count()) === 0);
  });

  await check('a sign-in that is no longer valid shows the sign-in panel', async () => {
    const port = new URL(origin).port;
    const s = conch.child;
    stopServer();
    await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
    rmSync(join(home, 'gateway-token'));
    const fresh = await startServer(home, `127.0.0.1:${port}`, serverEnv);
    await page.getByRole('heading', { name: 'Sign in to Conch' }).waitFor({ timeout: stepTimeout });
    await page.getByText('Open the link that conch serve printed (it carries the sign-in token).').waitFor({ timeout: stepTimeout });
    await shoot(page, 'signin');
    ctx.token = tokenOf(fresh);
    await page.goto(fresh);
    await card(page, 'echo after-restart').waitFor({ timeout: stepTimeout });
  });
}

/** The page logged no errors. */
export async function noErrors(ctx: Suite): Promise<void> {
  const { pageErrors } = ctx;
  await check('the page logged no errors', async () => {
    // A restart drops the event stream on purpose; the browser logs that.
    const real = pageErrors.filter((m) => !/WebSocket|ERR_CONNECTION_REFUSED|Failed to load resource/.test(m));
    if (real.length > 0) throw new Error(real.join('\n'));
  });
}
