import { describe, expect, it } from 'vitest';
import { commandOf, dangerOf, simpleCommands } from './danger';

const run = (command: string) => ({ tool: 'run_command', detail: `Run \`${command}\` in /home/me/proj` });

describe('dangerOf', () => {
  it.each([
    ['rm -rf build', 'rm -r'],
    ['rm -fr ./dist', 'rm -r'],
    ['rm -r -f node_modules', 'rm -r'],
    ['rm --recursive out', 'rm -r'],
    ['sudo rm -Rf /var/tmp/x', 'rm -r'],
    ['cd out && rm -rf *', 'rm -r'],
    ['find . -name "*.o" | xargs rm -rf', 'rm -r'],
    ['rsync -a --delete src/ host:dst/', '--delete'],
    ['find . -name "*.tmp" -delete', '--delete'],
    ['git push --force origin main', 'force-push'],
    ['git push -f', 'force-push'],
    ['git push --force-with-lease', 'force-push'],
    ['git push origin +main', 'force-push'],
    ['git push origin --delete feature', '--delete'],
    ['git push origin :old-branch', 'deletes a branch'],
    ['git reset --hard HEAD~3', 'reset --hard'],
    ['git clean -fdx', 'git clean'],
    ['git branch -D wip', 'not merged'],
    ['mkfs.ext4 /dev/sdb1', 'wipes'],
    ['dd if=/dev/zero of=/dev/sda', 'dd of='],
  ])('warns about %s', (cmd, said) => {
    expect(dangerOf(run(cmd))).toContain(said);
  });

  it.each([
    'ls -la',
    'rm notes.txt',
    'npm test',
    'git push origin main',
    'git status',
    'echo "rm -rf /"',
    'grep -r "force" .',
    'git log --format=%H -- src/rm',
    'git checkout -- file.txt',
    'cp -rf a b',
  ])('does not warn about %s', (cmd) => {
    expect(dangerOf(run(cmd))).toBeNull();
  });

  it('reads a coding agent’s question, and not a file write', () => {
    expect(dangerOf({ tool: 'Bash', detail: 'Run `rm -rf ~/.cache/x`?' })).toContain('rm -r');
    expect(dangerOf({ tool: 'write_file', detail: 'Write README.md' })).toBeNull();
    expect(dangerOf({ tool: 'run_command', detail: 'git push --force' })).toContain('force-push');
  });
});

describe('command parsing', () => {
  it('takes the command between backticks, else a command tool’s whole detail', () => {
    expect(commandOf(run('make'))).toBe('make');
    expect(commandOf({ tool: 'run_command', detail: 'make all' })).toBe('make all');
    expect(commandOf({ tool: 'edit_file', detail: 'Edit a.go' })).toBe('');
  });
  it('splits at operators and keeps quoted words whole', () => {
    expect(simpleCommands(`echo 'a; b' && rm -rf "my dir" | cat`)).toEqual([['echo', 'a; b'], ['rm', '-rf', 'my dir'], ['cat']]);
  });
});
