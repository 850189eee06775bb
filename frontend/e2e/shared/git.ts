// A git repository for the checks whose chats work in one (worktrees, helpers).

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Runs git in a repository as the e2e's author and gives back what it printed. */
export type Git = (...args: string[]) => string;

/** git in dir, as the e2e's author. */
export function gitIn(dir: string): Git {
  return (...args) => execFileSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.com', ...args], { cwd: dir, encoding: 'utf8' });
}

/** Makes dir a repository on main with one commit ("Start") of a README.md that says readme; returns git in it. */
export function gitRepo(dir: string, readme: string): Git {
  const git = gitIn(dir);
  git('init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'README.md'), readme);
  git('add', 'README.md');
  git('commit', '-q', '-m', 'Start');
  return git;
}
