import { describe, expect, it } from 'vitest';
import { shortId, shortIds, shortPath, shortWorktree } from './paths';

const id = '54b78ca4-dfec-4b1e-9a3f-0c1d2e3f4a5b';

describe('short forms', () => {
  it('writes the home folder as ~', () => {
    expect(shortPath('/home/me/src/app')).toBe('~/src/app');
    expect(shortPath('/home/me')).toBe('~');
    expect(shortPath('/Users/ann/proj')).toBe('~/proj');
    expect(shortPath('/root/x')).toBe('~/x');
    expect(shortPath('C:\\Users\\ann\\proj')).toBe('~\\proj');
    expect(shortPath('/home2/me')).toBe('/home2/me');
    expect(shortPath('/rootfs/a')).toBe('/rootfs/a');
    expect(shortPath('/srv/app')).toBe('/srv/app');
    expect(shortPath('')).toBe('');
  });
  it('cuts ids to eight characters', () => {
    expect(shortId(id)).toBe('54b78ca4');
    expect(shortId('abc')).toBe('abc');
    expect(shortIds(`conch/${id}`)).toBe('conch/54b78ca4');
    expect(shortWorktree(`/home/me/.conch/worktrees/${id}`)).toBe('~/.conch/worktrees/54b78ca4');
  });
});
