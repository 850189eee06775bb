// What every area's checks share: one server with a home of its own, one
// browser page signed in to it, the scripted model server, and what one
// check leaves for a later one (the checks run in one order, on one page).

import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { artifacts, bin, chromiumPath, temp } from './env';
import { startModelServer, type ModelServer } from './model';
import { startServer, tokenOf } from './server';

/** The shared state of a run. */
export interface Suite {
  /** The person's home (HOME), with Conch's home in it (~/.conch) and a project beside it. */
  userHome: string;
  home: string;
  project: string;
  serverEnv: Record<string, string>;
  /** The sign-in link the server printed, its origin, and the token now valid (a restart gives a new one). */
  url: string;
  origin: string;
  token: string;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Every error the page logged. */
  pageErrors: string[];
  model: ModelServer;
  /** The chats' folder, with notes.txt in it. */
  chatDir: string;
  /** False when this binary serves no GET /api/providers: the checks that need it say so. */
  providersLanded: boolean;
  /** The ask-mode task the approvals checks answer, and its question. */
  inboxId: string;
  inboxAsk: string;
  /** The chat that hands work off, and its background task. */
  parentChat: string;
  bgTask: any;
  /** The repository whose helper kept a worktree, and that helper's card. */
  keptRepo: string;
  keptCard: Locator | null;
  /** The task the folder checks made. */
  folderTask: string;
  /** The card of a task in the open chat. */
  taskCard: (taskId: string) => Locator;
}

/**
 * tsx keeps function names with a helper (__name) that a function sent into
 * the page (page.evaluate) brings along; the page needs it too.
 */
export const keepNames = 'globalThis.__name = (f) => f;';

/** Starts the server, the model server and the browser, and opens a page; throws when something the run needs is missing. */
export async function setUp(): Promise<Suite> {
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
  const token = tokenOf(url);
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
  await context.addInitScript(keepNames);
  // This page has put the offer of browser notifications away, so the
  // sidebar stays as the other checks expect; areas/notices checks it on
  // pages of its own.
  await context.addInitScript(() => localStorage.setItem('conch.notifications.offer', 'dismissed'));
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });

  const model = await startModelServer();
  const chatDir = temp('conch-e2e-chat-');
  writeFileSync(join(chatDir, 'notes.txt'), 'hello from e2e\n');
  return {
    userHome,
    home,
    project,
    serverEnv,
    url,
    origin,
    token,
    browser,
    context,
    page,
    pageErrors,
    model,
    chatDir,
    providersLanded: true,
    inboxId: '',
    inboxAsk: '',
    parentChat: '',
    bgTask: null,
    keptRepo: '',
    keptCard: null,
    folderTask: '',
    taskCard: (taskId) => page.locator(`#chat [data-task-card][data-task-id="${taskId}"]`),
  };
}
