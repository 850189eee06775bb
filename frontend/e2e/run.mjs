// End-to-end check of the tasks page against the real server.
//
//   npm run e2e            (CONCH_BIN=path/to/conch to use another binary)
//
// Starts `conch serve` on a free port with a throw-away home, opens the link
// it prints in headless Debian Chromium, drives the page like a person and
// saves screenshots (light and dark) under build/test-artifacts/. The binary
// embeds frontend/dist when it is built: run `npm run build` before building
// it, or the page under test is an older one (a warning says so).
//
// Prints one line per check and a last line "N passed, M failed"; exits
// non-zero when anything failed. The server is always stopped.

import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { layoutProblems } from './layout.mjs';
import { serveConch } from './serve.mjs';

const frontend = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = resolve(frontend, process.env.CONCH_BIN ?? '../build/bin/conch');
const artifacts = resolve(frontend, '../build/test-artifacts');
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const stepTimeout = 20_000;

/** @type {{name: string, ok: boolean, why?: string}[]} */
const results = [];
/** @type {import('node:child_process').ChildProcess | undefined} */
let server;
let serverLog = '';
const temps = /** @type {string[]} */ ([]);

/** @param {string} prefix */
function temp(prefix) {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

function stopServer() {
  if (server && server.exitCode === null && server.signalCode === null) {
    server.kill('SIGTERM');
    const s = server;
    setTimeout(() => s.exitCode === null && s.signalCode === null && s.kill('SIGKILL'), 3000).unref();
  }
}

process.on('exit', () => {
  if (server && server.exitCode === null) server.kill('SIGKILL');
});
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.on(sig, () => {
    stopServer();
    process.exit(130);
  });
}

/**
 * Starts `conch serve` and resolves with the sign-in URL it prints.
 * @param {string} home
 * @param {string} addr
 * @param {Record<string, string>} [env] added to this process's environment
 * @returns {Promise<string>}
 */
function startServer(home, addr, env = {}) {
  return serveConch({
    bin, home, addr, env,
    onSpawn: (child) => (server = child),
    onStderr: (text) => (serverLog += text),
  });
}

/**
 * The sign-in token of a link `conch serve` printed (it rides in the fragment).
 * @param {string} link
 */
function tokenOf(link) {
  return new URL(link).hash.replace(/^#token=/, '');
}

/**
 * Serves a page on another loopback port, as another local server (another
 * person's, on a shared machine) would, and records what browsers send it.
 * The page tries to frame the app and to call its API.
 * @param {string} appOrigin
 * @returns {Promise<{origin: string, requests: {url: string, headers: import('node:http').IncomingHttpHeaders}[], close: () => void}>}
 */
function startOtherPortServer(appOrigin) {
  /** @type {{url: string, headers: import('node:http').IncomingHttpHeaders}[]} */
  const requests = [];
  const srv = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(`<!doctype html><title>Another server</title>
<script>
  window.apiStatus = 'pending';
  fetch(${JSON.stringify(appOrigin + '/api/tasks')}, { credentials: 'include' })
    .then((r) => (window.apiStatus = String(r.status)), (e) => (window.apiStatus = 'blocked: ' + e.message));
</script>
<iframe id="app" src="${appOrigin}/" width="800" height="500"></iframe>`);
  });
  return new Promise((resolvePromise) => {
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      resolvePromise({ origin: `http://127.0.0.1:${port}`, requests, close: () => srv.close() });
    });
  });
}

/**
 * Starts the scripted model servers of the real coding-agent CLIs
 * (backend/internal/testrig/agentrig/agentservers, built by `make e2e` and named by
 * CONCH_AGENT_SERVERS) and resolves with the environment that runs Claude
 * Code, Codex and Gemini CLI against them.
 * @returns {Promise<{env: Record<string, string>, close: () => void}>}
 */
function startAgentServers() {
  const cmd = process.env.CONCH_AGENT_SERVERS;
  if (!cmd || !existsSync(cmd)) {
    return Promise.reject(new Error('CONCH_AGENT_SERVERS names no agentservers binary (make e2e builds it: go build -o build/bin/agentservers ./backend/internal/testrig/agentrig/agentservers)'));
  }
  const child = spawn(cmd, [temp('conch-e2e-agents-')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const close = () => {
    child.stdin?.end();
    setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 3000).unref();
  };
  process.on('exit', () => child.exitCode === null && child.kill('SIGKILL'));
  return new Promise((resolvePromise, reject) => {
    let out = '';
    child.stdout?.on('data', (b) => {
      out += b.toString();
      const line = out.split('\n')[0] ?? '';
      if (out.includes('\n')) resolvePromise({ env: JSON.parse(line).env, close });
    });
    child.on('exit', (code) => reject(new Error(`agentservers exited (${code}) before printing its environment`)));
  });
}

/**
 * Polls f until it returns something truthy.
 * @template T
 * @param {string} what
 * @param {() => Promise<T>} f
 * @param {number} [timeout]
 * @returns {Promise<T>}
 */
async function until(what, f, timeout = stepTimeout) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
      last = v;
    } catch (e) {
      last = e instanceof Error ? e.message : e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** @param {import('playwright-core').Page} page @param {string} title */
const card = (page, title) => page.getByRole('article', { name: title, exact: true });

/**
 * Waits for the card titled title to show status, with word in its chip.
 * @param {import('playwright-core').Page} page
 * @param {string} title
 * @param {string} status
 * @param {string} word
 */
async function waitStatus(page, title, status, word) {
  const c = card(page, title);
  await until(`"${title}" to be ${status}`, async () => (await c.getAttribute('data-status', { timeout: 1000 })) === status);
  const chip = c.locator('.chip').first();
  await until(`"${title}" chip to say "${word}"`, async () => ((await chip.textContent()) ?? '').includes(word));
  return c;
}

/**
 * Sends a command from the composer with the keyboard shortcut.
 * @param {import('playwright-core').Page} page
 * @param {string} command
 * @param {string} mode
 */
async function send(page, command, mode) {
  const box = page.getByRole('textbox', { name: 'Shell command' });
  await box.fill(command);
  await page.getByLabel('Mode').selectOption(mode);
  await page.getByRole('button', { name: /Do it in the background/ }).waitFor();
  await box.focus();
  await page.keyboard.press('Control+Shift+Enter');
  await until('the composer to clear after sending', async () => (await box.inputValue()) === '');
}

/**
 * Screenshots the page in light and in dark.
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
async function shoot(page, name) {
  for (const colorScheme of /** @type {const} */ (['light', 'dark'])) {
    await page.emulateMedia({ colorScheme });
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(artifacts, `${name}-${colorScheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * Calls the API with the bearer token, as another client (a notification, a script) would.
 * @param {string} origin
 * @param {string} token
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 */
async function api(origin, token, method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${origin}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  /** @type {any} */
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Not every answer has a body.
  }
  return { status: res.status, json };
}

/**
 * Goes to one of the app's pages through the sidebar.
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
async function visit(page, name) {
  await page.locator(`nav a[href="#${name}"]`).click();
  await page.getByRole('heading', { name: name.charAt(0).toUpperCase() + name.slice(1), level: 1 }).waitFor({ timeout: stepTimeout });
}

/**
 * A small OpenAI-compatible model server for the chat checks. /v1/models lists
 * one model; /v1/chat/completions streams real SSE chunks: after a person's
 * message it calls a tool (read_file, or write_file when the message asks to
 * write), its arguments split across chunks; once the tool's result is in the
 * request it streams a text reply in several pieces. "split this into three
 * parts" makes it call delegate with three parts, and answer once their
 * results are back. A task's own chat (its system prompt says so) reads
 * notes.txt slowly (or writes summary.txt when told to write), then calls
 * report_result. "keep a worktree" delegates one part with worktree: true;
 * that helper (its instructions say "commit-in-worktree") commits a file
 * with run_command, then reports. "two helpers on one file" delegates "Fix
 * the bug" (commits src/app.ts) and "Write the tests" (leaves src/app.ts
 * and src/app.test.ts uncommitted), both in worktrees, so their cards and
 * the merged result name the overlap. "across the agents" delegates three parts,
 * one each to Claude Code, Codex and Gemini CLI.
 * @returns {Promise<{url: string, requests: any[], close: () => void}>}
 */
function startModelServer() {
  /** @type {any[]} */
  const requests = [];
  const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
  const srv = createServer(async (req, res) => {
    let body = '';
    for await (const b of req) body += b;
    if (req.method === 'GET' && req.url?.endsWith('/models')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'test-model', object: 'model', owned_by: 'e2e' }] }));
      return;
    }
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"not found"}}');
      return;
    }
    /** @type {any} */
    const r = JSON.parse(body || '{}');
    requests.push(r);
    const msgs = /** @type {any[]} */ (r.messages ?? []);
    let lastUser = -1;
    msgs.forEach((m, i) => {
      if (m.role === 'user') lastUser = i;
    });
    const userText = String(msgs[lastUser]?.content ?? '');
    const after = msgs.slice(lastUser + 1);
    const toolDone = after.some((m) => m.role === 'tool');
    const writing = /write/i.test(userText);
    const fetching = /curl/i.test(userText);
    const splitting = /split this into three parts/i.test(userText);
    const keeping = /keep a worktree/i.test(userText);
    const overlapping = /two helpers on one file/i.test(userText);
    const acrossAgents = /across the agents/i.test(userText);
    const tabling = /as a table/i.test(userText);
    const system = msgs.filter((m) => m.role === 'system').map((m) => String(m.content ?? '')).join('\n');
    // A task's own chat (a background task or a helper): it reads the notes,
    // then reports. Its system prompt says it is a handed-off task, and only
    // tasks have report_result.
    const isTask = /handed off from another chat/i.test(system) || (r.tools ?? []).some((/** @type {any} */ t) => t.function?.name === 'report_result');
    const drafting = /draft and fall over/i.test(userText);
    // A helper told "salvage-draft" writes a draft, then its model falls
    // over: the helper fails with uncommitted work in its worktree.
    if (isTask && /salvage-draft/.test(userText) && toolDone) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"the model fell over","type":"server_error"}}');
      return;
    }
    // "over the limit": the account's quota is spent, for two hours.
    if (!isTask && /over the limit/i.test(userText)) {
      res.writeHead(402, { 'Content-Type': 'application/json', 'Retry-After': '7200' });
      res.end(JSON.stringify({ error: { message: 'You exceeded your current quota.', type: 'insufficient_quota' } }));
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    const id = `chatcmpl-${requests.length}`;
    const chunk = (/** @type {any} */ delta, /** @type {string | null} */ finish = null) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'test-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    /** Streams one tool call, its arguments cut in two. @param {string} name @param {unknown} a */
    const callTool = async (name, a) => {
      const args = JSON.stringify(a);
      const cut = Math.floor(args.length / 2);
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: `call_${requests.length}`, type: 'function', function: { name, arguments: '' } }] });
      await sleep(60);
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, cut) } }] });
      await sleep(60);
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(cut) } }] });
      chunk({}, 'tool_calls');
    };
    /** Streams a text reply in pieces. @param {string} text */
    const say = async (text) => {
      const pieces = text.match(/[\s\S]{1,12}/g) ?? [text];
      chunk({ role: 'assistant', content: '' });
      for (const p of pieces) {
        chunk({ content: p });
        await sleep(120);
      }
      chunk({}, 'stop');
    };
    if (isTask && /salvage-draft/.test(userText)) {
      await callTool('write_file', { path: 'draft.md', content: 'half a draft\n' });
    } else if (drafting) {
      if (!toolDone) await callTool('delegate', { parts: [{ title: 'Draft', instructions: 'Write the draft (salvage-draft).', worktree: true }] });
      else await say('The draft helper fell over; its work is kept.');
    } else if (isTask && /commit-in-worktree/.test(userText)) {
      if (!toolDone) {
        await sleep(300);
        await callTool('run_command', {
          command: "printf 'made by a helper\\n' > helper.txt && git add helper.txt && git -c user.name=t -c user.email=t@example.com commit -q -m 'Add helper.txt'",
        });
      } else {
        await sleep(200);
        await callTool('report_result', { summary: 'Committed `helper.txt` on its own branch.' });
      }
    } else if (isTask && /edit-app-(commit|leave)/.test(userText)) {
      const commit = /edit-app-commit/.test(userText);
      if (!toolDone) {
        await sleep(commit ? 300 : 600);
        await callTool('run_command', {
          command: commit
            ? "mkdir -p src && printf 'export const fixed = true;\\n' > src/app.ts && git add src && git -c user.name=t -c user.email=t@example.com commit -q -m 'Fix the bug'"
            : "mkdir -p src && printf 'export const tested = true;\\n' > src/app.ts && printf 'test(1);\\n' > src/app.test.ts",
        });
      } else {
        await callTool('report_result', { summary: commit ? 'Fixed the bug in `src/app.ts`.' : 'Wrote the tests.' });
      }
    } else if (isTask) {
      // Helper n of a split waits n seconds, so the cards show them at work side by side.
      const part = Number(/part (\d)/i.exec(userText)?.[1] ?? '0');
      if (!toolDone) {
        await sleep(part > 0 ? 1000 + part * 900 : writing ? 300 : 2500);
        if (writing) await callTool('write_file', { path: 'summary.txt', content: 'hello, summed up\n' });
        else await callTool('read_file', { path: 'notes.txt' });
      } else {
        await sleep(part > 0 ? 600 : 1200);
        const what = part > 0 ? `Part ${part} is done: the notes have one line.` : 'The notes say **hello from e2e**.';
        await callTool('report_result', { summary: `${what}\n\n- read \`notes.txt\`\n- changed nothing` });
      }
    } else if (acrossAgents) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [
            { title: 'Tests', instructions: 'WRITE tests.txt with the tests', provider: 'Claude Code' },
            { title: 'Docs', instructions: 'WRITE docs.txt with the docs', provider: 'Codex' },
            { title: 'Notes', instructions: 'WRITE notes.txt with the notes', provider: 'Gemini CLI' },
          ],
        });
      } else {
        await say('Claude Code, Codex and Gemini CLI each wrote their file.');
      }
    } else if (overlapping) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [
            { title: 'Fix the bug', instructions: 'Fix the bug in src/app.ts and commit it (edit-app-commit).', worktree: true },
            { title: 'Write the tests', instructions: 'Write tests for src/app.ts (edit-app-leave).', worktree: true },
          ],
        });
      } else {
        await say('Both helpers are back; they changed the same file.');
      }
    } else if (keeping) {
      if (!toolDone) {
        await callTool('delegate', { parts: [{ title: 'Commit a file', instructions: 'Add helper.txt and commit it (commit-in-worktree).', worktree: true }] });
      } else {
        await say('The helper committed its file on a branch of its own.');
      }
    } else if (splitting) {
      if (!toolDone) {
        await callTool('delegate', {
          parts: [1, 2, 3].map((n) => ({ title: `Check part ${n}`, instructions: `Read notes.txt and count its lines (part ${n}).` })),
        });
      } else {
        const merged = String(after.find((m) => m.role === 'tool')?.content ?? '');
        const blocks = (merged.match(/^## /gm) ?? []).length;
        await say(`All ${blocks} helpers are back: every part found one line in the notes.`);
      }
    } else if (tabling) {
      await say('The files:\n\n| File | Lines |\n|:---|---:|\n| `notes.txt` | 1 |\n| out.txt | 1 |\n');
    } else if (!toolDone) {
      const name = fetching ? 'run_command' : writing ? 'write_file' : 'read_file';
      const args = fetching
        ? { command: 'curl -s -m 1 http://127.0.0.1:9/ || true' }
        : writing
          ? { path: 'out.txt', content: 'written by e2e\n' }
          : { path: 'notes.txt' };
      await callTool(name, args);
    } else {
      const text = fetching
        ? 'Tried the address; nothing answered.'
        : writing
          ? 'Done: I wrote `out.txt`.'
        : 'The file says **hello from e2e**.\n\nIt has:\n\n- one line\n- no `<script>` in it\n\n```go\nfunc main() { // ok\n}\n```';
      await say(text);
    }
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model: 'test-model', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  return new Promise((resolvePromise) => {
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolvePromise({ url: `http://127.0.0.1:${port}/v1`, requests, close: () => srv.close() });
    });
  });
}

/** @param {import('playwright-core').Page} page */
const palette = (page) => page.getByRole('dialog', { name: 'Search Conch' });

/** @type {import('playwright-core').Page | undefined} */
let currentPage;

/**
 * Runs one named check and records how it went.
 * @param {string} name
 * @param {() => Promise<void>} f
 */
async function check(name, f) {
  try {
    await f();
    results.push({ name, ok: true });
    console.log(`ok    ${name}`);
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n').slice(0, 6).join('\n      ') : String(e);
    results.push({ name, ok: false, why });
    console.log(`FAIL  ${name}\n      ${why}`);
    const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
    await currentPage?.screenshot({ path: join(artifacts, `fail-${slug}.png`) }).catch(() => {});
  }
}

async function main() {
  mkdirSync(artifacts, { recursive: true });
  if (!existsSync(bin)) throw new Error(`no server binary at ${bin}; build it with \`go build -o build/bin/conch .\` at the repo root, or set CONCH_BIN`);
  if (!existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath}; install Debian's chromium package (apt-get install chromium)`);

  // The server's person has a home of their own (HOME), with Conch's home
  // in it as by default (~/.conch) and a project beside it: folders under
  // it read ~/… on every surface.
  const userHome = temp('conch-e2e-user-');
  const home = join(userHome, '.conch');
  const project = join(userHome, 'projects', 'site');
  mkdirSync(project, { recursive: true });
  const serverEnv = { HOME: userHome };
  const url = await startServer(home, '127.0.0.1:0', serverEnv);
  const origin = new URL(url).origin;
  let token = tokenOf(url);
  console.log(`server ${origin} (home ${home})`);
  const index = await fetch(`${origin}/`, { headers: { Authorization: `Bearer ${token}` } });
  if (!(await index.text()).includes('id="app"')) {
    throw new Error(`${bin} serves no frontend (HTTP ${index.status} for /): run \`npm run build\` here, then build the binary again`);
  }

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      '--disable-quic',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 }, colorScheme: 'light' });
  const page = await context.newPage();
  currentPage = page;
  /** @type {string[]} */
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });

  try {
    await check('opens the sign-in link on the welcome: what Conch does, what it found, a shell task to try', async () => {
      await page.goto(url);
      const welcome = page.locator('#welcome');
      await welcome.getByRole('heading', { name: 'Welcome to Conch', level: 1 }).waitFor({ timeout: stepTimeout });
      if ((await page.title()) !== 'Conch') throw new Error(`window title is "${await page.title()}"`);
      await welcome.getByText('Conch does work for you in the background').waitFor({ timeout: stepTimeout });
      // What it found, as GET /api/found says it: this home's environment has no Ollama at its address.
      const found = (await api(origin, token, 'GET', '/api/found')).json;
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
      const served = await (await fetch(`${origin}/`, { headers: { Authorization: `Bearer ${token}` } })).text();
      const built = existsSync(join(frontend, 'dist/index.html')) ? readFileSync(join(frontend, 'dist/index.html'), 'utf8') : '';
      if (built && served.trim() !== built.trim()) console.log('      warning: the binary embeds another frontend build than frontend/dist; rebuild it');
      await shoot(page, 'empty');
    });

    await check('a page on another loopback port gets no credential and cannot frame the app', async () => {
      const other = await startOtherPortServer(origin);
      try {
        const evil = await context.newPage();
        await evil.goto(`${other.origin}/`);
        await until('the other page to try the API', async () => (await evil.evaluate(() => /** @type {any} */ (window).apiStatus)) !== 'pending');
        // The browser sent the other server nothing of the sign-in: no cookie, no token anywhere.
        for (const r of other.requests) {
          const sent = JSON.stringify(r.headers) + r.url;
          if (sent.includes(token)) throw new Error(`the other server received the token: ${sent}`);
          if (r.headers.cookie) throw new Error(`the other server received cookies: ${r.headers.cookie}`);
        }
        const seen = await evil.evaluate(() => ({ cookie: document.cookie, storage: JSON.stringify(sessionStorage) }));
        if (seen.cookie !== '' || seen.storage.includes(token)) throw new Error(`the other page can read ${JSON.stringify(seen)}`);
        // Its API call got nothing: refused by the browser (no CORS) or 401.
        const status = await evil.evaluate(() => /** @type {any} */ (window).apiStatus);
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
        const made = await api(origin, token, 'POST', '/api/tasks', { text: 'echo after-reload', options: { provider: 'shell', mode: 'auto' } });
        if (made.status !== 201) throw new Error(`creating a task answered ${made.status}`);
        await waitStatus(page, 'echo after-reload', 'done', 'Done');
        if (page.url().includes('token')) throw new Error(`the token stayed in the address bar: ${page.url()}`);
      } finally {
        other.close();
      }
    });

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
      const made = await api(origin, token, 'POST', '/api/tasks', { text: `echo "${long}"`, title, options: { provider: 'shell', mode: 'auto' } });
      if (made.status !== 201) throw new Error(`creating the task answered ${made.status}`);
      const c = await waitStatus(page, title, 'done', 'Done');
      const fold = c.getByRole('button', { name: 'Fold into one line' });
      if (await fold.count()) await fold.click();
      await c.locator('.oneline').waitFor({ timeout: stepTimeout });
      for (const [width, height] of /** @type {[number, number][]} */ ([[1440, 900], [900, 700]])) {
        await page.setViewportSize({ width, height });
        await page.mouse.move(0, 0);
        await page.waitForTimeout(200);
        const m = await c.evaluate((el) => {
          const t = /** @type {HTMLElement} */ (el.querySelector('h3'));
          const o = /** @type {HTMLElement} */ (el.querySelector('.oneline'));
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

    await check('reconnects after the server restarts and reloads the list', async () => {
      const port = new URL(origin).port;
      const s = server;
      stopServer();
      await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
      const banner = page.getByRole('alert').filter({ hasText: "Can't reach Conch" });
      await banner.waitFor({ timeout: stepTimeout });
      await shoot(page, 'offline');
      await startServer(home, `127.0.0.1:${port}`, serverEnv);
      const res = await fetch(`${origin}/api/tasks`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ text: 'echo after-restart', options: { provider: 'shell', mode: 'auto' } }),
      });
      if (res.status !== 201) throw new Error(`creating a task over the API answered ${res.status}`);
      await waitStatus(page, 'echo after-restart', 'done', 'Done');
      await until('the offline banner to go', async () => (await banner.count()) === 0);
    });

    await check('a sign-in that is no longer valid shows the sign-in panel', async () => {
      const port = new URL(origin).port;
      const s = server;
      stopServer();
      await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
      rmSync(join(home, 'gateway-token'));
      const fresh = await startServer(home, `127.0.0.1:${port}`, serverEnv);
      await page.getByRole('heading', { name: 'Sign in to Conch' }).waitFor({ timeout: stepTimeout });
      await page.getByText('Open the link that conch serve printed (it carries the sign-in token).').waitFor({ timeout: stepTimeout });
      await shoot(page, 'signin');
      token = tokenOf(fresh);
      await page.goto(fresh);
      await card(page, 'echo after-restart').waitFor({ timeout: stepTimeout });
    });

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
      const made = await api(origin, token, 'POST', '/api/tasks', { text: 'sleep 30 # palette-stop', options: { mode: 'auto' } });
      if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
      const id = made.json.id;
      await until('the task to work', async () => (await api(origin, token, 'GET', `/api/tasks/${id}`)).json?.status === 'running');
      await page.keyboard.press('Control+K');
      await palette(page).waitFor({ timeout: stepTimeout });
      await page.keyboard.type('palette-stop');
      const row = palette(page).getByRole('option').first();
      await until('the task to be the best match', async () => ((await row.textContent()) ?? '').includes('palette-stop'));
      await row.locator('[data-action="stop"]').waitFor({ timeout: stepTimeout });
      await shoot(page, 'palette-actions');
      await row.locator('[data-action="stop"]').click();
      await until('the task to stop', async () => (await api(origin, token, 'GET', `/api/tasks/${id}`)).json?.status === 'stopped');
      await until('the row to offer Try again', async () => (await row.locator('[data-action="retry"]').count()) === 1);
      await page.keyboard.press('Control+Enter');
      await until('Ctrl+Enter to run it again', async () => ['queued', 'running'].includes((await api(origin, token, 'GET', `/api/tasks/${id}`)).json?.status));
      await page.keyboard.press('Escape');
      await api(origin, token, 'POST', `/api/tasks/${id}/stop`);
      await until('the task to stop again', async () => (await api(origin, token, 'GET', `/api/tasks/${id}`)).json?.status === 'stopped');
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

    /** @type {string} */
    let inboxId = '';
    /** @type {string} */
    let inboxAsk = '';
    await check('the approvals page starts empty, then lists an ask-mode task', async () => {
      await visit(page, 'approvals');
      await page.getByText('Nothing is waiting for your OK.').waitFor({ timeout: stepTimeout });
      await shoot(page, 'approvals-empty');
      const created = await api(origin, token, 'POST', '/api/tasks', { text: 'echo inbox', options: { provider: 'shell', mode: 'ask', cwd: home } });
      if (created.status !== 201) throw new Error(`creating the task answered ${created.status}`);
      inboxId = created.json.id;
      const item = page.locator(`[data-approval][data-task-id="${inboxId}"]`);
      await item.waitFor({ timeout: stepTimeout });
      const text = (await item.textContent()) ?? '';
      if (!text.includes('echo inbox')) throw new Error(`the item does not name the command: ${text}`);
      if (!text.includes('a command in ~/.conch')) throw new Error(`the item does not name the folder as ~/.conch: ${text}`);
      await until('the time left to show', async () => /\d+m \d\ds left/.test((await item.locator('[aria-label="Time left"]').textContent()) ?? ''));
      await until('the sidebar to count it (amber)', async () => ((await page.getByTestId('approvals-badge').textContent()) ?? '').includes('1'));
      const listed = await api(origin, token, 'GET', '/api/approvals');
      const mine = listed.json.approvals.find((/** @type {any} */ a) => a.taskId === inboxId);
      if (!mine) throw new Error('GET /api/approvals does not list the task');
      inboxAsk = mine.ask.id;
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
      const item = page.locator(`[data-approval][data-task-id="${inboxId}"]`);
      await item.getByRole('button', { name: 'Allow' }).click();
      await until('the item to leave the list', async () => (await item.count()) === 0);
      await page.getByText('Nothing is waiting for your OK.').waitFor({ timeout: stepTimeout });
      const toast = page.locator(`.toast[data-task-id="${inboxId}"]`);
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
      const again = await api(origin, token, 'POST', `/api/tasks/${inboxId}/answer`, { askId: inboxAsk, allow: true });
      if (again.status !== 409) throw new Error(`the second answer got ${again.status}`);
      await page.waitForTimeout(500);
      await page.getByText('Nothing is waiting for your OK.').waitFor({ timeout: stepTimeout });
      if ((await page.getByRole('alert').count()) !== 0) throw new Error(`an alert shows: ${await page.getByRole('alert').first().textContent()}`);
    });

    await check('an answer that lost the race to another client says "Already answered" calmly', async () => {
      const created = await api(origin, token, 'POST', '/api/tasks', { text: 'echo race', options: { provider: 'shell', mode: 'ask' } });
      const id = created.json.id;
      const item = page.locator(`[data-approval][data-task-id="${id}"]`);
      await item.waitFor({ timeout: stepTimeout });
      // Another client (the notification's Deny) answers first; the page's own answer then gets the server's 409.
      await page.route(`**/api/tasks/${id}/answer`, async (route) => {
        const task = (await api(origin, token, 'GET', `/api/tasks/${id}`)).json;
        const first = await api(origin, token, 'POST', `/api/tasks/${id}/answer`, { askId: task.ask.id, allow: false });
        if (first.status !== 200) throw new Error(`the first answer got ${first.status}`);
        const second = await api(origin, token, 'POST', `/api/tasks/${id}/answer`, { askId: task.ask.id, allow: true });
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
      const created = await api(origin, token, 'POST', '/api/tasks', { text: 'echo toast-open', options: { provider: 'shell', mode: 'auto' } });
      const toast = page.locator(`.toast[data-task-id="${created.json.id}"]`);
      await toast.waitFor({ timeout: stepTimeout });
      await toast.getByRole('button', { name: 'Open' }).click();
      await until('the card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === created.json.id);
      if (!(await page.evaluate(() => document.hasFocus()))) throw new Error('the test page has no focus, so this cannot be checked');
      const quiet = await api(origin, token, 'POST', '/api/tasks', { text: 'echo quiet', options: { provider: 'shell', mode: 'auto' } });
      await waitStatus(page, 'echo quiet', 'done', 'Done');
      await page.waitForTimeout(600);
      if ((await page.locator(`.toast[data-task-id="${quiet.json.id}"]`).count()) !== 0) throw new Error('a toast showed while the tasks page was in view');
    });

    await check('a new question raises a toast away from the tasks and approvals pages', async () => {
      await visit(page, 'settings');
      const created = await api(origin, token, 'POST', '/api/tasks', { text: 'echo toast-ask', options: { provider: 'shell', mode: 'ask' } });
      const toast = page.locator(`.toast[data-task-id="${created.json.id}"]`);
      await toast.waitFor({ timeout: stepTimeout });
      if (!((await toast.textContent()) ?? '').includes('needs your OK')) throw new Error(`the toast says "${await toast.textContent()}"`);
      await toast.getByRole('button', { name: 'Open' }).click();
      await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor({ timeout: stepTimeout });
      const item = page.locator(`[data-approval][data-task-id="${created.json.id}"]`);
      await item.getByRole('button', { name: 'Deny' }).click();
      await until('the item to leave the list', async () => (await item.count()) === 0);
    });

    await check('the doctor page shows each check, links to Tasks and checks again', async () => {
      await visit(page, 'doctor');
      const tasksCheck = page.locator('[data-check="tasks"]');
      await tasksCheck.waitFor({ timeout: stepTimeout });
      const report = await api(origin, token, 'GET', '/api/doctor');
      const shown = await page.locator('[data-check]').count();
      if (shown !== report.json.checks.length) throw new Error(`${shown} checks shown, the API has ${report.json.checks.length}`);
      const problems = report.json.checks.filter((/** @type {any} */ c) => c.level === 'warn' || c.level === 'fail').length;
      const marked = (await page.getByTestId('doctor-mark').count()) > 0;
      if (marked !== problems > 0) throw new Error(`the (!) marker is ${marked ? 'shown' : 'missing'} with ${problems} problems`);
      await page.getByRole('button', { name: 'Check again' }).click();
      await until('the check to finish', async () => !(await page.getByRole('button', { name: 'Check again' }).isDisabled()));
      await page.mouse.move(0, 0);
      await shoot(page, 'doctor');
      await tasksCheck.getByRole('link', { name: 'Open Tasks' }).click();
      await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor({ state: 'visible', timeout: stepTimeout });
    });

    await check('settings: a switch persists across a reload, a bad limit says why', async () => {
      await visit(page, 'settings');
      const sw = page.getByRole('switch', { name: 'When a background task finishes' });
      await sw.waitFor({ timeout: stepTimeout });
      if ((await sw.getAttribute('aria-checked')) !== 'true') throw new Error('the topic starts off');
      await sw.focus();
      await page.keyboard.press('Space');
      await until('the switch to turn off', async () => (await sw.getAttribute('aria-checked')) === 'false');
      await until('the server to have it', async () => (await api(origin, token, 'GET', '/api/preferences')).json.notifications.tasks === false);
      await page.reload();
      await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor({ timeout: stepTimeout });
      await until('the switch to load off', async () => (await sw.getAttribute('aria-checked', { timeout: 1000 })) === 'false');
      const limit = page.getByLabel('Background tasks at once');
      await limit.fill('0');
      await limit.press('Enter');
      await page.getByText('Use a number from 1 to 64.').waitFor({ timeout: stepTimeout });
      await page.mouse.move(0, 0);
      await shoot(page, 'settings');
      await limit.fill('2');
      await limit.press('Enter');
      await until('the server to have limit 2', async () => (await api(origin, token, 'GET', '/api/preferences')).json.limits.background === 2);
      if ((await page.getByText('Use a number from 1 to 64.').count()) !== 0) throw new Error('the error stayed after a good value');
      await limit.fill('3');
      await limit.press('Enter');
      await sw.click();
      await until('the switch and limit to be back', async () => {
        const p = (await api(origin, token, 'GET', '/api/preferences')).json;
        return p.notifications.tasks === true && p.limits.background === 3;
      });
    });

    await check('app.compose sends what the composer holds (or focuses it); app.open shows the task', async () => {
      // `conch serve` has no global shortcut or notification clicks: stand in for
      // them by putting the events on the page's stream.
      /** @type {import('playwright-core').WebSocketRoute[]} */
      const sockets = [];
      await page.routeWebSocket(/\/api\/events\?ticket=[0-9a-f]+$/, (ws) => {
        ws.connectToServer();
        sockets.push(ws);
      });
      await page.reload();
      await page.getByRole('heading', { level: 1 }).first().waitFor({ timeout: stepTimeout });
      await until('the event stream to open', async () => sockets.length > 0);
      const emit = (/** @type {unknown} */ e) => sockets[sockets.length - 1]?.send(JSON.stringify(e));
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
      const tasks = (await api(origin, token, 'GET', '/api/tasks')).json.tasks;
      const hello = tasks.find((/** @type {any} */ t) => t.text === 'echo hello-e2e');
      await visit(page, 'approvals');
      emit({ type: 'app.open', id: hello.id });
      await until('the card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === hello.id);
      await page.unrouteAll({ behavior: 'ignoreErrors' });
    });

    const model = await startModelServer();
    const chatDir = temp('conch-e2e-chat-');
    writeFileSync(join(chatDir, 'notes.txt'), 'hello from e2e\n');
    let providersLanded = true;
    await check('a new chat with only the shell says what it does and how to connect a model; a message runs as a command', async () => {
      await page.locator('nav button', { hasText: 'New chat' }).click();
      const view = page.locator('#chat');
      await view.getByRole('heading', { name: 'New chat', level: 1 }).waitFor({ timeout: stepTimeout });
      const probe = await api(origin, token, 'GET', '/api/providers');
      providersLanded = probe.status === 200;
      const shell = probe.json?.providers?.find((/** @type {any} */ p) => p.id === 'shell');
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

    await check('the providers page connects a custom OpenAI-compatible server', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
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
      const after = (await api(origin, token, 'GET', '/api/providers/e2e-model')).json;
      if (!after.keySet || after.models.default !== 'test-model' || after.name !== 'E2E Model') throw new Error(`after the edit: ${JSON.stringify(after)}`);
      await page.mouse.move(0, 0);
      await shoot(page, 'providers');
    });

    await check('a chat in ask mode streams a reply, shows the step, asks before writing and writes once allowed', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
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
      const sizes = async (/** @type {string} */ name) => {
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
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
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
      if ((await api(origin, token, 'GET', `/api/conversations/${id}`)).json.conversation.tainted) throw new Error('the server still has the chat tainted');
    });

    await check("a chat's question waits in Approvals beside the tasks' and is answered there", async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
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
      await until('the chat to finish its turn', async () => !(await api(origin, token, 'GET', `/api/conversations/${id}`)).json.conversation.running);
      await page.locator(`nav a[data-chat-id="${id}"]`).click();
      await until('the chat to open again', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(id)}`);
    });

    await check('a chat is renamed in place and found in the palette', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
      const view = page.locator('#chat');
      const id = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
      await view.getByRole('button', { name: 'What does notes.txt say?' }).click();
      const input = view.getByLabel('Chat title');
      await input.fill('Notes check');
      await input.press('Enter');
      await until('the server to have the new title', async () => (await api(origin, token, 'GET', `/api/conversations/${id}`)).json.conversation.title === 'Notes check');
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
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
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
      await until('the turn to end', async () => !(await api(origin, token, 'GET', `/api/conversations/${id}`)).json.conversation.running);
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-table');

      // A usage limit reads as one sentence: the provider named once, the reset in local time, what to do.
      // In a chat of its own: the model keeps seeing the words of a message it never answered.
      const conv = (await api(origin, token, 'GET', `/api/conversations/${id}`)).json.conversation;
      const spent = await api(origin, token, 'POST', '/api/conversations', { title: 'Limit check', provider: conv.provider, model: conv.model, mode: 'ask', cwd: chatDir });
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

    await check('the sidebar keeps a long chat title, its highlight and its dot inside it, at 1200 and 900 px', async () => {
      // The chat the checks after this one go on in.
      const back = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
      const made = await api(origin, token, 'POST', '/api/conversations', {
        title: 'A very long chat title that runs on well past the width of the sidebar and then some more',
        provider: 'shell',
        mode: 'ask',
        cwd: chatDir,
      });
      if (made.status !== 201) throw new Error(`POST /api/conversations: ${made.status} ${JSON.stringify(made.json)}`);
      const long = made.json.id;
      await page.locator(`nav a[data-chat-id="${long}"]`).waitFor({ timeout: stepTimeout });
      await page.locator(`nav a[data-chat-id="${long}"]`).click();
      await api(origin, token, 'POST', `/api/conversations/${long}/messages`, { text: 'true' });
      await page.locator(`nav a[data-chat-id="${long}"] .dot`).waitFor({ timeout: stepTimeout });
      for (const size of [{ width: 1200, height: 820 }, { width: 900, height: 700 }]) {
        await page.setViewportSize(size);
        await page.waitForTimeout(150);
        const m = await page.evaluate((cid) => {
          const nav = /** @type {HTMLElement} */ (document.querySelector('nav.side'));
          const list = /** @type {HTMLElement} */ (nav.querySelector('.chats'));
          const a = /** @type {HTMLElement} */ (nav.querySelector(`a[data-chat-id="${cid}"]`));
          const title = /** @type {HTMLElement} */ (a.querySelector('.chat-title'));
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
          const page = /** @type {HTMLElement} */ (document.querySelector('#chat'));
          return page.getBoundingClientRect().right <= window.innerWidth + 1;
        });
        if (!m.ellipsis || !m.inside || !m.dotsInside || m.scrollsSideways || !fits) throw new Error(`at ${size.width} px: ${JSON.stringify({ ...m, fits })}`);
        await page.mouse.move(0, 0);
        await shoot(page, `sidebar-long-${size.width}`);
      }
      await page.setViewportSize({ width: 1200, height: 820 });
      await until('the long chat to settle', async () => {
        const c = (await api(origin, token, 'GET', `/api/conversations/${long}`)).json.conversation;
        if (c.ask) await api(origin, token, 'POST', `/api/conversations/${long}/asks/${c.ask.id}`, { allow: false });
        return !c.running;
      });
      await page.locator(`nav a[data-chat-id="${back}"]`).click();
      await until('the chat before to be back', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(back)}`);
    });

    // Hand it off: the chat sends work to the background and splits it into helpers.
    /** The card of a task in the open chat. @param {string} taskId */
    const taskCard = (taskId) => page.locator(`#chat [data-task-card][data-task-id="${taskId}"]`);
    let parentChat = '';
    let bgTask = /** @type {any} */ (null);
    await check('Ctrl+Shift+Enter in a chat sends the text to the background; its card updates in place', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
      const view = page.locator('#chat');
      parentChat = decodeURIComponent((await page.evaluate(() => location.hash)).replace(/^#chat\//, ''));
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Summarise the notes file for me');
      await view.getByRole('button', { name: /Do it in the background/ }).waitFor({ timeout: stepTimeout });
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-composer-background');
      await box.focus();
      await page.keyboard.press('Control+Shift+Enter');
      await until('the composer to clear', async () => (await box.inputValue()) === '');
      bgTask = await until('the task on the server, sent from this chat', async () => {
        const list = (await api(origin, token, 'GET', '/api/tasks')).json.tasks;
        return list.find((/** @type {any} */ t) => t.text === 'Summarise the notes file for me' && t.parentConversationId === parentChat);
      });
      if (!bgTask.conversationId) throw new Error('the task has no chat of its own');
      const c = taskCard(bgTask.id);
      await c.waitFor({ timeout: stepTimeout });
      /** @type {string[]} */
      const seen = [];
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
      if (!model.requests.some((r) => JSON.stringify(r.messages ?? []).includes('Summarise the notes file for me') && (r.tools ?? []).some((/** @type {any} */ t) => t.function?.name === 'report_result'))) {
        throw new Error("the task's own chat never asked the model");
      }
      if ((await page.locator(`nav a[data-chat-id="${bgTask.conversationId}"]`).count()) !== 0) throw new Error('the task chat is in the chat list');
    });

    await check('the result of the background task comes back into the chat', async () => {
      if (!bgTask) throw new Error('not run: no background task');
      const view = page.locator('#chat');
      const result = view.locator(`[data-task-result][data-task-id="${bgTask.id}"]`);
      await result.waitFor({ timeout: stepTimeout });
      await until('the summary as markdown', async () => (await result.locator('strong', { hasText: 'hello from e2e' }).count()) === 1);
      const c = taskCard(bgTask.id);
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
      if (!bgTask) throw new Error('not run: no background task');
      const c = taskCard(bgTask.id);
      await c.getByRole('link', { name: 'Open chat' }).click();
      await until("the task's chat to open", async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(bgTask.conversationId)}`);
      const banner = page.locator('#chat [data-task-banner]');
      await until('the banner to name the chat it came from', async () => ((await banner.textContent()) ?? '').replace(/\s+/g, ' ').includes('Background task from Notes check'));
      await page.locator('#chat [data-kind="user"]', { hasText: 'Summarise the notes file for me' }).waitFor({ timeout: stepTimeout });
      await page.locator('#chat [data-task-result]', { hasText: 'hello from e2e' }).waitFor({ timeout: stepTimeout });
      if ((await page.locator(`nav a[data-chat-id="${bgTask.conversationId}"]`).count()) !== 0) throw new Error('the task chat is in the chat list');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-task-banner');
      await banner.getByRole('link', { name: 'Notes check' }).click();
      await until('the chat it came from to open again', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(parentChat)}`);
      await taskCard(bgTask.id).waitFor({ timeout: stepTimeout });
    });

    await check('"split this into three parts" runs three helpers as one group of cards, then answers', async () => {
      if (!bgTask) throw new Error('not run: no background task');
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
      const helpers = (await api(origin, token, 'GET', '/api/tasks')).json.tasks.filter((/** @type {any} */ t) => t.kind === 'helper' && t.parentConversationId === parentChat);
      if (helpers.length !== 3 || new Set(helpers.map((/** @type {any} */ t) => t.groupId)).size !== 1) throw new Error(`${helpers.length} helpers on the server, or not one group`);
      await until('the reply in view', async () => view.locator('[data-kind="assistant"]', { hasText: 'All 3 helpers are back' }).isVisible());
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-helpers-done');
      await page.setViewportSize({ width: 720, height: 700 });
      await shoot(page, 'chat-helpers-narrow');
      await page.setViewportSize({ width: 1200, height: 820 });
      // A helper's chat says which part it is.
      const second = helpers.find((/** @type {any} */ t) => t.title === 'Check part 2');
      await group.locator(`[data-task-card][data-task-id="${second.id}"]`).getByRole('link', { name: 'Open chat' }).click();
      const banner = page.locator('#chat [data-task-banner]');
      await until('the helper banner', async () => ((await banner.textContent()) ?? '').replace(/\s+/g, ' ').includes('Helper 2 of 3 for Notes check'));
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-helper-banner');
      await banner.getByRole('link', { name: 'Notes check' }).click();
      await until('back in the chat', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(parentChat)}`);
    });

    await check("a background task that needs an OK says so on its card; its chat asks, and Allow lets it finish", async () => {
      if (!bgTask) throw new Error('not run: no background task');
      const view = page.locator('#chat');
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Write a summary of the notes');
      await view.getByRole('button', { name: /Do it in the background/ }).click();
      await until('the composer to clear', async () => (await box.inputValue()) === '');
      const t = await until('the task on the server', async () =>
        (await api(origin, token, 'GET', '/api/tasks')).json.tasks.find((/** @type {any} */ x) => x.text === 'Write a summary of the notes'),
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
      if (!bgTask) throw new Error('not run: no background task');
      const view = page.locator('#chat');
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Summarise the notes, but slowly');
      await box.press('Control+Shift+Enter');
      await until('the composer to clear', async () => (await box.inputValue()) === '');
      const t = await until('the task on the server', async () =>
        (await api(origin, token, 'GET', '/api/tasks')).json.tasks.find((/** @type {any} */ x) => x.text === 'Summarise the notes, but slowly'),
      );
      const c = taskCard(t.id);
      await until('the card to be working', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'running');
      await until('elapsed to tick', async () => /^[1-9]\d*s$/.test(((await c.locator('.elapsed').textContent()) ?? '').trim()));
      await c.getByRole('button', { name: 'Stop' }).click();
      await until('the card to say Stopped', async () => (await c.getAttribute('data-status', { timeout: 1000 })) === 'stopped' && ((await c.locator('.chip').textContent()) ?? '').includes('Stopped'));
      if ((await c.getByRole('button', { name: 'Stop' }).count()) !== 0) throw new Error('Stop stayed on a stopped card');
    });

    await check('a task from a chat: the tasks page card opens its chat, app.open opens the chat it came from; app.compose and the palette send the chat composer', async () => {
      if (!bgTask) throw new Error('not run: no background task');
      /** @type {import('playwright-core').WebSocketRoute[]} */
      const sockets = [];
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
      await until("the task's chat to open", async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(bgTask.conversationId)}`);
      await visit(page, 'doctor');
      sockets[sockets.length - 1]?.send(JSON.stringify({ type: 'app.open', id: bgTask.id }));
      await until('the chat it came from to open', async () => (await page.evaluate(() => location.hash)) === `#chat/${encodeURIComponent(parentChat)}`);
      await until('its card to have the focus', async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-task-id') ?? '')) === bgTask.id);

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
      if ((await page.evaluate(() => location.hash)) !== `#chat/${encodeURIComponent(parentChat)}`) throw new Error('sending left the chat');
      const sent = await until('both tasks on the server, from this chat', async () => {
        const list = (await api(origin, token, 'GET', '/api/tasks')).json.tasks.filter(
          (/** @type {any} */ t) => t.parentConversationId === parentChat && (t.text === 'Summarise the notes once more' || t.text === 'Summarise the notes via the palette'),
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
    let keptRepo = '';
    let keptCard = /** @type {import('playwright-core').Locator | null} */ (null);
    await check('a helper with a worktree keeps its branch and work on its card (chat and tasks page)', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
      keptRepo = project;
      const git = (/** @type {string[]} */ ...args) => execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], { cwd: keptRepo, encoding: 'utf8' });
      git('init', '-q', '-b', 'main');
      writeFileSync(join(keptRepo, 'README.md'), '# A repository for the e2e\n');
      git('add', 'README.md');
      git('commit', '-q', '-m', 'Start');
      const made = await api(origin, token, 'POST', '/api/conversations', { title: 'Worktree check', provider: 'e2e-model', model: 'test-model', mode: 'auto', cwd: keptRepo });
      if (made.status !== 200 && made.status !== 201) throw new Error(`POST /api/conversations: ${made.status} ${JSON.stringify(made.json)}`);
      const chatId = made.json.id;
      await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
      const view = page.locator('#chat');
      await view.getByRole('heading', { name: 'Worktree check', level: 1 }).waitFor({ timeout: stepTimeout });
      await until("the chat's header to name its folder as ~/projects/site", async () => ((await view.locator('.folder code').textContent({ timeout: 1000 })) ?? '').trim() === '~/projects/site');
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Please keep a worktree of your work');
      await box.press('Enter');
      await view.locator('[data-kind="assistant"]', { hasText: 'committed its file on a branch' }).waitFor({ timeout: 40_000 });
      const helper = (await api(origin, token, 'GET', '/api/tasks')).json.tasks.find((/** @type {any} */ t) => t.kind === 'helper' && t.parentConversationId === chatId);
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
      keptCard = c;
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
      if (!keptCard) throw new Error('not run: no kept worktree');
      const c = keptCard;
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
      if (execFileSync('git', ['branch', '--list', 'conch/*'], { cwd: keptRepo, encoding: 'utf8' }).trim() === '') throw new Error('Esc removed the branch');
      await page.keyboard.press('Enter');
      await confirm.waitFor({ timeout: stepTimeout });
      await c.getByRole('button', { name: 'Remove it and its branch' }).click();
      await c.locator('[data-worktree="removed"]').waitFor({ timeout: stepTimeout });
      const left = execFileSync('git', ['branch', '--list', 'conch/*'], { cwd: keptRepo, encoding: 'utf8' }).trim();
      if (left !== '') throw new Error(`branches left: ${left}`);
      if ((await c.getByRole('button', { name: 'Remove worktree' }).count()) !== 0) throw new Error('Remove worktree is still offered');
      await page.mouse.move(0, 0);
      await shoot(page, 'chat-worktree-removed');
    });

    await check('two helpers that changed the same file say so on both cards and in the merged result', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
      const repo = temp('conch-e2e-overlap-');
      const git = (/** @type {string[]} */ ...args) => execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], { cwd: repo, encoding: 'utf8' });
      git('init', '-q', '-b', 'main');
      writeFileSync(join(repo, 'README.md'), '# Two helpers, one file\n');
      git('add', 'README.md');
      git('commit', '-q', '-m', 'Start');
      const made = await api(origin, token, 'POST', '/api/conversations', { title: 'Overlap check', provider: 'e2e-model', model: 'test-model', mode: 'auto', cwd: repo });
      if (made.status !== 200 && made.status !== 201) throw new Error(`POST /api/conversations: ${made.status} ${JSON.stringify(made.json)}`);
      const chatId = made.json.id;
      await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
      const view = page.locator('#chat');
      await view.getByRole('heading', { name: 'Overlap check', level: 1 }).waitFor({ timeout: stepTimeout });
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Put two helpers on one file');
      await box.press('Enter');
      await view.locator('[data-kind="assistant"]', { hasText: 'changed the same file' }).waitFor({ timeout: 40_000 });
      const helpers = (await api(origin, token, 'GET', '/api/tasks')).json.tasks.filter((/** @type {any} */ t) => t.kind === 'helper' && t.parentConversationId === chatId);
      const fix = helpers.find((/** @type {any} */ t) => t.title === 'Fix the bug');
      const tests = helpers.find((/** @type {any} */ t) => t.title === 'Write the tests');
      if (!fix || !tests) throw new Error(`helpers: ${JSON.stringify(helpers.map((/** @type {any} */ t) => t.title))}`);
      for (const h of [fix, tests]) {
        const o = h.worktree?.overlap ?? [];
        if (h.status !== 'done' || !h.worktree?.kept || o.length !== 1 || o[0].file !== 'src/app.ts') throw new Error(`${h.title}: ${h.status}, worktree ${JSON.stringify(h.worktree)}`);
      }
      const said = "Both 'Fix the bug' and 'Write the tests' changed src/app.ts.";
      const merged = model.requests.some((r) => (r.messages ?? []).some((/** @type {any} */ m) => m.role === 'tool' && String(m.content ?? '').endsWith(said)));
      if (!merged) throw new Error('the merged result the assistant got does not name the overlap');
      /** @param {import('playwright-core').Locator} c @param {string} want */
      const saysOverlap = (c, want) =>
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
      const made = await api(origin, token, 'POST', '/api/tasks', {
        text: 'printf ok > verified.txt',
        options: { provider: 'shell', mode: 'auto', cwd: dir, check: 'grep -q ok verified.txt' },
      });
      if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
      await visit(page, 'tasks');
      const c = page.locator(`article[data-task-id="${made.json.id}"]`);
      await until('the card to say Done (verified)', async () => ((await c.locator('.chip').textContent({ timeout: 1000 })) ?? '').trim() === 'Done (verified)');
      const t = (await api(origin, token, 'GET', `/api/tasks/${made.json.id}`)).json;
      if (t.result?.source !== 'check') throw new Error(`its result came from ${t.result?.source}`);
      await c.scrollIntoViewIfNeeded();
      await page.mouse.move(0, 0);
      await shoot(page, 'tasks-verified');
    });

    await check('a helper that fails with work in its worktree keeps it: the card lists it, Resume is offered, and Discard asks first, quoting it', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
      const repo = temp('conch-e2e-salvage-');
      const git = (/** @type {string[]} */ ...args) => execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], { cwd: repo, encoding: 'utf8' });
      git('init', '-q', '-b', 'main');
      writeFileSync(join(repo, 'README.md'), '# Salvage\n');
      git('add', 'README.md');
      git('commit', '-q', '-m', 'Start');
      const made = await api(origin, token, 'POST', '/api/conversations', { title: 'Salvage check', provider: 'e2e-model', model: 'test-model', mode: 'auto', cwd: repo });
      if (made.status !== 200 && made.status !== 201) throw new Error(`POST /api/conversations: ${made.status} ${JSON.stringify(made.json)}`);
      const chatId = made.json.id;
      await page.evaluate((id) => (location.hash = `#chat/${encodeURIComponent(id)}`), chatId);
      const view = page.locator('#chat');
      await view.getByRole('heading', { name: 'Salvage check', level: 1 }).waitFor({ timeout: stepTimeout });
      const box = view.getByRole('textbox', { name: 'Message' });
      await box.fill('Please draft and fall over');
      await box.press('Enter');
      await view.locator('[data-kind="assistant"]', { hasText: 'its work is kept' }).waitFor({ timeout: 40_000 });
      const helper = (await api(origin, token, 'GET', '/api/tasks')).json.tasks.find((/** @type {any} */ t) => t.kind === 'helper' && t.parentConversationId === chatId);
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
      if (!parentChat) throw new Error('not run: no chat to send from');
      const made = await api(origin, token, 'POST', '/api/tasks', { text: 'Summarise the notes, but slowly please', conversationId: parentChat });
      if (made.status !== 201) throw new Error(`POST /api/tasks: ${made.status} ${JSON.stringify(made.json)}`);
      const id = made.json.id;
      await until('the task to work', async () => (await api(origin, token, 'GET', `/api/tasks/${id}`)).json?.status === 'running');
      const port = new URL(origin).port;
      const s = server;
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

    await check('settings: the provider that carries on at a limit is picked, saved and still picked after a reload', async () => {
      if (!providersLanded) throw new Error('not run: GET /api/providers is not served by this binary');
      await visit(page, 'settings');
      const select = page.getByLabel('When a provider reaches its limit');
      await until('the connected provider offered', async () => (await select.locator('option[value="e2e-model"]').count()) === 1);
      if ((await select.inputValue()) !== '') throw new Error(`the fallback starts as "${await select.inputValue()}"`);
      await select.selectOption('e2e-model');
      await page.locator('[data-setting="limitFallback"]').getByText('Saved').waitFor({ timeout: stepTimeout });
      await page.reload();
      await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor({ timeout: stepTimeout });
      await until('the fallback still picked after a reload', async () => (await page.getByLabel('When a provider reaches its limit').inputValue()) === 'e2e-model');
      const prefs = await api(origin, token, 'GET', '/api/preferences');
      if (prefs.json?.limitFallback !== 'e2e-model') throw new Error(`GET /api/preferences says limitFallback ${JSON.stringify(prefs.json?.limitFallback)}`);
      await page.getByRole('heading', { name: 'Usage limits' }).scrollIntoViewIfNeeded();
      await page.mouse.move(0, 0);
      await shoot(page, 'settings-fallback');
    });

    await check('settings: Backup downloads a live snapshot of the store, or a tar with the logs; retention is saved', async () => {
      await visit(page, 'settings');
      const button = page.getByRole('button', { name: 'Download backup' });
      await button.scrollIntoViewIfNeeded();
      const logs = page.getByRole('switch', { name: 'Include output logs' });
      for (const withLogs of [false, true]) {
        if ((await logs.getAttribute('aria-checked')) !== String(withLogs)) await logs.click();
        const [download] = await Promise.all([page.waitForEvent('download', { timeout: stepTimeout }), button.click()]);
        const name = download.suggestedFilename();
        const bytes = readFileSync(await download.path());
        // bbolt's magic sits after the first page's 16-byte header; a tar says ustar at 257.
        const bbolt = bytes.length > 20 && bytes.readUInt32LE(16) === 0xed0cdaed;
        const tar = bytes.length > 262 && bytes.subarray(257, 262).toString('latin1') === 'ustar';
        if (withLogs ? !tar || !/^conch-backup-\d{8}-\d{6}\.tar$/.test(name) || !bytes.includes('output.log') : !bbolt || !/^conch-backup-\d{8}-\d{6}\.db$/.test(name)) {
          throw new Error(`the ${withLogs ? 'tar' : 'snapshot'} download is ${name}, ${bytes.length} bytes starting ${bytes.subarray(0, 24).toString('hex')}`);
        }
        await page.getByText(`Downloaded ${name}`).waitFor({ timeout: stepTimeout });
      }
      const keep = page.getByLabel('Keep finished tasks for (days)');
      await keep.fill('30');
      await keep.press('Enter');
      await until('the server to keep finished tasks 30 days', async () => (await api(origin, token, 'GET', '/api/preferences')).json.retentionDays === 30);
      // The person types on while a save is on its way: the answer to the first must not
      // overwrite what they typed since, and the saves land in the order they were made.
      let release = () => {};
      const held = new Promise((resolve) => (release = () => resolve(undefined)));
      await page.route('**/api/preferences', async (route) => {
        if (route.request().method() === 'PATCH' && JSON.parse(route.request().postData() ?? '{}').retentionDays === 45) await held;
        await route.continue();
      });
      const state = page.locator('[data-setting="retentionDays"] .saved');
      try {
        await keep.fill('45');
        await keep.press('Enter');
        await until('the save on its way', async () => (await state.textContent()) === 'Saving…');
        await keep.fill('90');
        release();
        await until('the first save answered', async () => (await state.textContent()) === 'Saved');
        if ((await api(origin, token, 'GET', '/api/preferences')).json.retentionDays !== 45) throw new Error('the held save did not land');
        if ((await keep.inputValue()) !== '90') throw new Error(`the answer overwrote what was typed since: the field shows ${await keep.inputValue()}`);
        await keep.press('Enter');
        await until('the retention back at 90', async () => (await api(origin, token, 'GET', '/api/preferences')).json.retentionDays === 90);
      } finally {
        release();
        await page.unroute('**/api/preferences');
      }
      await button.scrollIntoViewIfNeeded();
      await page.mouse.move(0, 0);
      await shoot(page, 'settings-backup');
      await logs.click();
    });

    await check('past the first 100 finished tasks: scrolling loads the rest page by page, and a search by title finds one not loaded', async () => {
      // The oldest of 130 quick tasks, so the first page of the list leaves it out.
      const needle = await api(origin, token, 'POST', '/api/tasks', { text: 'true', title: 'Find the needle in the haystack', options: { provider: 'shell', mode: 'auto' } });
      if (needle.status !== 201) throw new Error(`creating the task answered ${needle.status}`);
      await until('it to finish', async () => (await api(origin, token, 'GET', `/api/tasks/${needle.json.id}`)).json?.status === 'done');
      for (let i = 0; i < 130; i++) {
        const made = await api(origin, token, 'POST', '/api/tasks', { text: 'true', title: `Scale row ${i}`, options: { provider: 'shell', mode: 'auto' } });
        if (made.status !== 201) throw new Error(`creating task ${i} answered ${made.status}`);
      }
      await until('all of them to finish', async () => {
        const l = (await api(origin, token, 'GET', '/api/tasks')).json;
        return l && l.counts.queued === undefined && l.counts.running === undefined && l.tasks.length >= 100 && l.next !== '';
      }, 60_000);
      const overview = (await api(origin, token, 'GET', '/api/tasks')).json;
      if (overview.tasks.some((/** @type {any} */ t) => t.id === needle.json.id)) throw new Error('the first page holds the oldest task; the check needs more tasks');
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
      const late = await api(origin, token, 'POST', '/api/tasks', { text: 'true', title: 'Finished while you read', options: { provider: 'shell', mode: 'auto' } });
      await until('it to finish', async () => (await api(origin, token, 'GET', `/api/tasks/${late.json.id}`)).json?.status === 'done');
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

    let folderTask = '';
    await check('a folder under the home reads ~/… in a question, on its card, in Approvals and in a chat header', async () => {
      const made = await api(origin, token, 'POST', '/api/tasks', { text: 'echo from the site folder', options: { provider: 'shell', mode: 'ask', cwd: project } });
      if (made.status !== 201) throw new Error(`creating the task answered ${made.status}`);
      folderTask = made.json.id;
      await visit(page, 'tasks');
      const c = await waitStatus(page, 'echo from the site folder', 'needs-you', 'Needs your OK');
      await until('the question to name the folder as ~/projects/site', async () => ((await c.locator('[data-ask-detail]').textContent({ timeout: 1000 })) ?? '').includes('in ~/projects/site'));
      const where = c.locator('[data-folder]');
      if (((await where.textContent()) ?? '').trim() !== 'in ~/projects/site') throw new Error(`the card's footer says "${await where.textContent()}"`);
      if ((await where.getAttribute('title')) !== project) throw new Error(`the footer's title is ${await where.getAttribute('title')}`);
      if ((await c.getByRole('button', { name: 'Copy path' }).getAttribute('data-copy')) !== project) throw new Error('the copy button does not copy the whole folder');
      await visit(page, 'approvals');
      const item = page.locator(`[data-approval][data-task-id="${folderTask}"]`);
      await until('Approvals to name the folder as ~/projects/site', async () => ((await item.textContent({ timeout: 1000 })) ?? '').includes('a command in ~/projects/site'));
      const chat = await api(origin, token, 'POST', '/api/conversations', { title: 'Site folder', provider: 'shell', mode: 'ask', cwd: project });
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

    await check('every page at 1440×900 and 900×700, light and dark: nothing cut, nothing scrolls sideways', async () => {
      // Rows that test the widths: long titles finished and failed, one at
      // work in a deep folder, the question above (folderTask) waiting.
      const long = 'Check that every page of the site still renders after the dependency upgrade';
      const deep = join(project, 'packages', 'a-rather-long-package-name-for-the-footer', 'src', 'components', 'forms', 'fields');
      mkdirSync(deep, { recursive: true });
      /** @type {string[]} */
      const made = [];
      for (const [text, title, cwd] of [['echo upgraded', long, project], ['exit 3', `${long}, twice`, project], ['sleep 60', `${long} while it sleeps`, deep]]) {
        const r = await api(origin, token, 'POST', '/api/tasks', { text, title, options: { provider: 'shell', mode: 'auto', cwd } });
        if (r.status !== 201) throw new Error(`creating "${title}" answered ${r.status}`);
        made.push(r.json.id);
      }
      await visit(page, 'tasks');
      await page.locator('#tasks .scroll').first().evaluate((el) => el.scrollTo({ top: 0 }));
      await waitStatus(page, long, 'done', 'Done');
      await waitStatus(page, `${long}, twice`, 'failed', "Didn't finish");
      await waitStatus(page, `${long} while it sleeps`, 'running', 'Working');
      const chatId = parentChat || (await page.locator('nav a[data-chat-id]').first().getAttribute('data-chat-id')) || '';
      /** @type {[string, string][]} */
      const pages = [
        ['welcome', '#welcome'],
        ['tasks', '#tasks'],
        ['chat', `#chat/${encodeURIComponent(chatId)}`],
        ['approvals', '#approvals'],
        ['providers', '#providers'],
        ['doctor', '#doctor'],
        ['settings', '#settings'],
      ];
      /** @type {string[]} */
      const cut = [];
      /** @param {string} where */
      const measure = async (where) => {
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
        await page.keyboard.press('Escape');
      }
      await page.setViewportSize({ width: 1200, height: 820 });
      await api(origin, token, 'POST', `/api/tasks/${made[2]}/stop`);
      if (folderTask) {
        const t = (await api(origin, token, 'GET', `/api/tasks/${folderTask}`)).json;
        if (t?.ask) await api(origin, token, 'POST', `/api/tasks/${folderTask}/answer`, { askId: t.ask.id, allow: false });
      }
      if (cut.length > 0) throw new Error(`${cut.length} things cut or scrolling sideways: ${cut.slice(0, 16).join(' | ')}`);
    });

    await check('past the first 100 chats: the sidebar loads older ones as it scrolls, and the palette finds one not loaded', async () => {
      // The oldest of 130 chats, so the sidebar's first page leaves it out.
      const needle = await api(origin, token, 'POST', '/api/conversations', { title: 'Quokka migration notes' });
      if (needle.status !== 201) throw new Error(`creating the chat answered ${needle.status}`);
      for (let i = 0; i < 130; i++) {
        const made = await api(origin, token, 'POST', '/api/conversations', { title: `Scale chat ${i}` });
        if (made.status !== 201) throw new Error(`creating chat ${i} answered ${made.status}`);
      }
      const first = (await api(origin, token, 'GET', '/api/conversations')).json;
      if (first.conversations.length !== 100 || first.next === '' || first.conversations.some((/** @type {any} */ c) => c.id === needle.json.id)) {
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

    await check('a delegate hands its parts to the real Claude Code, Codex and Gemini CLI; the three cards say by whom', async () => {
      const agents = await startAgentServers();
      try {
        const s = server;
        stopServer();
        await until('the server to stop', async () => s?.exitCode !== null || s?.signalCode !== null);
        // A Conch of its own, whose PATH and environment hold the CLIs.
        const link = await startServer(temp('conch-e2e-agents-home-'), '127.0.0.1:0', agents.env);
        const o = new URL(link).origin;
        const tk = tokenOf(link);
        await page.goto(link);
        const listed = await until('the three CLIs to be found ready', async () => {
          const ps = (await api(o, tk, 'GET', '/api/providers')).json?.providers ?? [];
          const ready = ps.filter((/** @type {any} */ p) => p.category === 'coding-agent' && p.ready).map((/** @type {any} */ p) => p.name);
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
        for (const [file, by] of /** @type {[string, string][]} */ ([['tests.txt', 'claude'], ['docs.txt', 'codex'], ['notes.txt', 'gemini']])) {
          const text = readFileSync(join(dir, file), 'utf8');
          if (text !== `written by ${by}\n`) throw new Error(`${file} says ${JSON.stringify(text)}`);
        }
        await page.mouse.move(0, 0);
        await shoot(page, 'chat-helpers-agents');
      } finally {
        agents.close();
      }
    });

    model.close();

    await check('the page logged no errors', async () => {
      // A restart drops the event stream on purpose; the browser logs that.
      const real = pageErrors.filter((m) => !/WebSocket|ERR_CONNECTION_REFUSED|Failed to load resource/.test(m));
      if (real.length > 0) throw new Error(real.join('\n'));
    });

    await shoot(page, 'final');
  } finally {
    await browser.close().catch(() => {});
  }
}

let fatal = '';
try {
  await main();
} catch (e) {
  fatal = e instanceof Error ? e.message : String(e);
  console.log(`FAIL  setup\n      ${fatal}`);
} finally {
  stopServer();
  await new Promise((r) => setTimeout(r, 200));
  for (const d of temps) rmSync(d, { recursive: true, force: true });
}

const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed + (fatal ? 1 : 0);
if (failed > 0 && serverLog.trim() !== '') console.log(`server stderr:\n${serverLog.trim()}`);
console.log(`screenshots in ${artifacts}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
