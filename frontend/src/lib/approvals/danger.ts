// Destructive commands, told apart from ordinary ones so a question about
// one is shown with a warning: `rm -rf`, `--delete`, force pushes and a
// few others that lose work for good. Pure and conservative: it reads the
// command the question shows (the text between backticks, else the whole
// detail of a command tool) word by word, and only a known shape warns.
// backend/ask/danger.go is the same check for the tray: keep the two in
// step (its test holds this file's cases).

import type { Question } from '../backend/contract';

/** The tools whose question is a command. */
const commandTools = new Set(['run_command', 'bash', 'Bash', 'exec_command', 'shell', 'run_shell_command']);

/** The command a question is about, or '' when it is not about one. */
export function commandOf(q: Pick<Question, 'tool' | 'detail'>): string {
  const m = /`([^`]+)`/.exec(q.detail);
  if (m?.[1]) return m[1];
  return commandTools.has(q.tool) ? q.detail : '';
}

/** Splits a command line into simple commands (at ;, &&, ||, |, & and new lines), each as words. */
export function simpleCommands(cmd: string): string[][] {
  const out: string[][] = [];
  let words: string[] = [];
  let word = '';
  let quote: '' | "'" | '"' = '';
  let inWord = false;
  const endWord = (): void => {
    if (inWord) words.push(word);
    word = '';
    inWord = false;
  };
  const endCommand = (): void => {
    endWord();
    if (words.length > 0) out.push(words);
    words = [];
  };
  for (let i = 0; i < cmd.length; i++) {
    const c = cmd[i] ?? '';
    if (quote) {
      if (c === quote) quote = '';
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < cmd.length) {
      word += cmd[++i];
      inWord = true;
    } else if (c === ';' || c === '|' || c === '&' || c === '\n' || c === '(' || c === ')') {
      endCommand();
    } else if (c === ' ' || c === '\t') {
      endWord();
    } else {
      word += c;
      inWord = true;
    }
  }
  endCommand();
  return out;
}

/** Words that run the command after them. */
const wrappers = new Set(['sudo', 'doas', 'env', 'command', 'exec', 'nohup', 'time', 'nice', 'xargs', 'builtin']);

/** The program and its arguments, past wrappers (sudo, env, xargs) and VAR=value prefixes. */
function programOf(words: readonly string[]): { name: string; args: string[] } | null {
  let i = 0;
  while (i < words.length) {
    const w = words[i] ?? '';
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w) || wrappers.has(w)) {
      i++;
      // A wrapper's own options (sudo -u root, xargs -0) come before the program.
      while (i < words.length && (words[i] ?? '').startsWith('-')) i++;
      continue;
    }
    break;
  }
  const name = words[i];
  if (name === undefined) return null;
  return { name: name.replace(/^.*\//, ''), args: words.slice(i + 1) };
}

/** Reports whether args hold a short flag letter (in -rf, -r -f) or one of the long forms. */
function hasFlag(args: readonly string[], letter: string, ...long: string[]): boolean {
  return args.some((a) => (long.includes(a) || (/^-[A-Za-z]+$/.test(a) && a.includes(letter))));
}

/** Why one simple command is destructive, or null. */
function dangerOfCommand(words: readonly string[]): string | null {
  const p = programOf(words);
  if (!p) return null;
  const { name, args } = p;
  if (args.includes('--delete') || (name === 'find' && args.includes('-delete'))) return 'It deletes files (--delete), and they cannot be brought back.';
  switch (name) {
    case 'rm':
      if (hasFlag(args, 'r', '--recursive') || hasFlag(args, 'R')) return 'It deletes files and folders for good (rm -r), without asking again.';
      return null;
    case 'git': {
      const sub = args.find((a) => !a.startsWith('-'));
      const rest = sub === undefined ? [] : args.slice(args.indexOf(sub) + 1);
      if (sub === 'push' && (hasFlag(rest, 'f', '--force', '--force-with-lease', '--mirror') || rest.some((a) => /^--force/.test(a) || /^\+/.test(a))))
        return "It force-pushes: the remote's history is rewritten and others' commits there can be lost.";
      if (sub === 'push' && (rest.includes('-d') || rest.some((a) => a.startsWith(':')))) return 'It deletes a branch or tag on the remote.';
      if (sub === 'reset' && rest.includes('--hard')) return 'It throws away uncommitted changes (git reset --hard).';
      if (sub === 'clean' && hasFlag(rest, 'f', '--force')) return 'It deletes untracked files for good (git clean).';
      if (sub === 'branch' && rest.includes('-D')) return 'It deletes a branch even if its work is not merged.';
      return null;
    }
    case 'mkfs':
    case 'wipefs':
    case 'shred':
      return `It wipes data for good (${name}).`;
    case 'dd':
      return args.some((a) => a.startsWith('of=')) ? 'It writes raw bytes over a file or disk (dd of=…).' : null;
    default:
      if (name.startsWith('mkfs.')) return `It wipes data for good (${name}).`;
      return null;
  }
}

/**
 * Why the command a question is about is destructive, as one sentence for
 * its warning, or null when nothing in it is. A command line warns when any
 * of its simple commands does.
 */
export function dangerOf(q: Pick<Question, 'tool' | 'detail'>): string | null {
  const cmd = commandOf(q);
  if (cmd === '') return null;
  for (const words of simpleCommands(cmd)) {
    const why = dangerOfCommand(words);
    if (why) return why;
  }
  return null;
}
