// End-to-end checks of the app against the real server.
//
//   npm run e2e            (CONCH_BIN=path/to/conch to use another binary;
//                           CONCH_E2E_ONLY=hosts,agents to run only those
//                           sections, by their functions' names, while
//                           working on them: one that builds on another
//                           needs that one named too)
//
// Starts `conch serve` on a free port with a throw-away home, opens the link
// it prints in headless Debian Chromium, drives the page like a person and
// saves screenshots (light and dark) under build/test-artifacts/. The binary
// embeds frontend/dist when it is built: run `npm run build` before building
// it, or the page under test is an older one (a warning says so).
//
// The checks live in areas/ by what they are about, over the set-up in
// shared/. They run in the order below, on one page: a check may build on
// what an earlier one left (a task, a chat, a repository).
//
// Prints one line per check and a last line "N passed, M failed"; exits
// non-zero when anything failed. The server is always stopped.

import * as activity from './areas/activity';
import * as approvals from './areas/approvals';
import * as chats from './areas/chats';
import * as hosts from './areas/hosts';
import * as layout from './areas/layout';
import * as notices from './areas/notices';
import * as palette from './areas/palette';
import * as providers from './areas/providers';
import * as routines from './areas/routines';
import * as session from './areas/session';
import * as settings from './areas/settings';
import * as tasks from './areas/tasks';
import * as welcome from './areas/welcome';
import * as worktrees from './areas/worktrees';
import { artifacts, removeTemps } from './shared/env';
import { shoot } from './shared/page';
import { shown, tally } from './shared/results';
import { conch, stopServer } from './shared/server';
import { setUp, type Suite } from './shared/suite';

/** The checks' sections, in the order they run. */
const sections: ((ctx: Suite) => Promise<void>)[] = [
  welcome.firstRun,
  session.otherPort,
  tasks.commands,
  session.restart,
  tasks.folding,
  palette.search,
  activity.activity,
  routines.routines,
  approvals.approvals,
  settings.doctor,
  settings.preferences,
  tasks.appEvents,
  notices.notices,
  chats.shellChat,
  providers.customServer,
  chats.talk,
  layout.sidebar,
  chats.handOff,
  worktrees.worktrees,
  settings.laterSettings,
  tasks.paging,
  layout.folders,
  layout.pages,
  chats.paging,
  hosts.hosts,
  providers.agents,
  session.noErrors,
];

async function main(): Promise<void> {
  const ctx = await setUp();
  shown.page = ctx.page;
  try {
    const only = (process.env.CONCH_E2E_ONLY ?? '').split(',').filter((n) => n !== '');
    for (const run of sections) if (only.length === 0 || only.includes(run.name)) await run(ctx);
    await shoot(ctx.page, 'final');
  } finally {
    ctx.model.close();
    await ctx.browser.close().catch(() => {});
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
  removeTemps();
}

const { passed, failed } = tally(fatal);
if (failed > 0 && conch.log.trim() !== '') console.log(`server stderr:\n${conch.log.trim()}`);
console.log(`screenshots in ${artifacts}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
