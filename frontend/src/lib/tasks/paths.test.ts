import { describe, expect, it } from 'vitest';
import { folderProblem, shortId, shortIds, shortPath, shortPathsIn } from './paths';

const id = '54b78ca4-dfec-4b1e-9a3f-0c1d3f4a5b6c';

describe('shortPath', () => {
  it('writes the home folder as ~ and a folder under it as ~/…', () => {
    expect(shortPath('/root', '/root')).toBe('~');
    expect(shortPath('/root/', '/root')).toBe('~/');
    expect(shortPath('/root/projects/site', '/root')).toBe('~/projects/site');
    expect(shortPath('/home/me/src/app', '/home/me/')).toBe('~/src/app');
    expect(shortPath('/Users/ann/proj', '/Users/ann')).toBe('~/proj');
  });
  it('uses the home the server says, whatever it is called', () => {
    expect(shortPath('/var/lib/conch-user/projects/site', '/var/lib/conch-user')).toBe('~/projects/site');
    // Another person's home is not this person's ~.
    expect(shortPath('/home/bob/projects', '/home/ann')).toBe('/home/bob/projects');
  });
  it('leaves a folder that only starts with the same letters as the home', () => {
    expect(shortPath('/root2', '/root')).toBe('/root2');
    expect(shortPath('/root2/projects', '/root')).toBe('/root2/projects');
    expect(shortPath('/home/me-too/x', '/home/me')).toBe('/home/me-too/x');
    expect(shortPath('/srv/app', '/root')).toBe('/srv/app');
  });
  it('shows every folder in full while the home is not known, or is the root', () => {
    expect(shortPath('/root/projects/site', '')).toBe('/root/projects/site');
    expect(shortPath('/projects/site', '/')).toBe('/projects/site');
    expect(shortPath('C:\\proj', 'C:\\')).toBe('C:\\proj');
    expect(shortPath('', '/root')).toBe('');
  });
  it('reads a Windows home in any case and with either slash', () => {
    expect(shortPath('C:\\Users\\ann', 'C:\\Users\\ann')).toBe('~');
    expect(shortPath('C:\\Users\\ann\\proj', 'C:\\Users\\ann')).toBe('~\\proj');
    expect(shortPath('c:\\users\\ANN\\proj', 'C:\\Users\\ann')).toBe('~\\proj');
    expect(shortPath('C:/Users/ann/proj', 'C:\\Users\\ann\\')).toBe('~/proj');
    expect(shortPath('C:\\Users\\anna\\proj', 'C:\\Users\\ann')).toBe('C:\\Users\\anna\\proj');
    expect(shortPath('D:\\Users\\ann\\proj', 'C:\\Users\\ann')).toBe('D:\\Users\\ann\\proj');
    // On Linux the case is part of the name.
    expect(shortPath('/Root/x', '/root')).toBe('/Root/x');
  });
  it("names a helper's worktree by its task's short id, in the home or not", () => {
    expect(shortPath(`/root/.conch/worktrees/${id}`, '/root')).toBe('~/.conch/worktrees/3f4a5b6c');
    expect(shortPath(`/root/.conch/worktrees/${id}/web`, '/root')).toBe('~/.conch/worktrees/3f4a5b6c/web');
    expect(shortPath(`/tmp/conch-home/worktrees/${id}`, '/root')).toBe('/tmp/conch-home/worktrees/3f4a5b6c');
    expect(shortPath(`C:\\Users\\ann\\.conch\\worktrees\\${id}`, 'C:\\Users\\ann')).toBe('~\\.conch\\worktrees\\3f4a5b6c');
    // A folder of the person's own that holds a uuid keeps it.
    expect(shortPath(`/root/data/${id}`, '/root')).toBe(`~/data/${id}`);
  });
});

describe('shortPathsIn', () => {
  it("writes the paths in a server's sentence as shortPath does, and nothing else", () => {
    expect(shortPathsIn('Database: /root/.conch/conch.db', '/root')).toBe('Database: ~/.conch/conch.db');
    expect(shortPathsIn('Opens /root/a and `/root/b`, not /root2 (or /srv/c).', '/root')).toBe('Opens ~/a and `~/b`, not /root2 (or /srv/c).');
    expect(shortPathsIn('Saved in C:\\Users\\ann\\Downloads', 'C:\\Users\\ann')).toBe('Saved in ~\\Downloads');
    expect(shortPathsIn('Ollama at http://127.0.0.1:11434/root answers', '/root')).toBe('Ollama at http://127.0.0.1:11434/root answers');
    expect(shortPathsIn('1/2 of a/root', '/root')).toBe('1/2 of a/root');
    expect(shortPathsIn('Database: /root/.conch/conch.db', '')).toBe('Database: /root/.conch/conch.db');
  });
});

describe('short ids', () => {
  it('cuts uuids to their last eight characters, other ids to their first', () => {
    expect(shortId(id)).toBe('3f4a5b6c');
    expect(shortId('abc')).toBe('abc');
    expect(shortId('not-a-uuid-at-all')).toBe('not-a-uu');
    expect(shortIds(`conch/${id}`)).toBe('conch/3f4a5b6c');
  });
  it('tells apart tasks made in the same minute (version 7 uuids share their first characters)', () => {
    const a = '019ad3f1-6a2b-7c3d-8e4f-5a6b7c8d9e0f';
    const b = '019ad3f1-7f00-7a11-9b22-c3d4e5f60718';
    expect(shortId(a)).not.toBe(shortId(b));
    expect(shortIds(`conch/${a}`)).not.toBe(shortIds(`conch/${b}`));
  });
});

describe('folderProblem', () => {
  it('takes a full path here, and a full path or one under ~ on a host', () => {
    expect(folderProblem('')).toBe('');
    expect(folderProblem('/srv/app')).toBe('');
    expect(folderProblem('C:\\work')).toBe('');
    expect(folderProblem('src/app')).toBe('Use a full path starting with /, or leave it empty for your home folder.');
    expect(folderProblem('~/src/app', 'Build box')).toBe('');
    expect(folderProblem('~', 'Build box')).toBe('');
    expect(folderProblem('/srv/app', 'Build box')).toBe('');
    expect(folderProblem('src/app', 'Build box')).toBe('Use a full path there, or one starting with ~/ for your home folder on Build box.');
  });
});
