import { describe, expect, it } from 'vitest';
import { shortId, shortIds, shortPath, shortWorktree } from './paths';

const id = '54b78ca4-dfec-4b1e-9a3f-0c1d3f4a5b6c';

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
  it('cuts uuids to their last eight characters, other ids to their first', () => {
    expect(shortId(id)).toBe('3f4a5b6c');
    expect(shortId('abc')).toBe('abc');
    expect(shortId('not-a-uuid-at-all')).toBe('not-a-uu');
    expect(shortIds(`conch/${id}`)).toBe('conch/3f4a5b6c');
    expect(shortWorktree(`/home/me/.conch/worktrees/${id}`)).toBe('~/.conch/worktrees/3f4a5b6c');
  });
  it('tells apart tasks made in the same minute (version 7 uuids share their first characters)', () => {
    const a = '019ad3f1-6a2b-7c3d-8e4f-5a6b7c8d9e0f';
    const b = '019ad3f1-7f00-7a11-9b22-c3d4e5f60718';
    expect(shortId(a)).not.toBe(shortId(b));
    expect(shortIds(`conch/${a}`)).not.toBe(shortIds(`conch/${b}`));
  });
});
