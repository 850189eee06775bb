import { describe, expect, it, vi } from 'vitest';
import type { Backend } from './backend/backend';
import { ApiError } from './backend/error';
import { HomeFolder } from './home.svelte';

/** A backend that only answers about (all HomeFolder asks). */
function backendAnswering(about: Backend['about']): Backend {
  return { about } as Partial<Backend> as Backend;
}

describe('HomeFolder', () => {
  it('shows folders in full until the server says its home, then under ~', async () => {
    const about = vi.fn(async () => ({ userHome: '/srv/people/ann', version: '0.1.0' }));
    const home = new HomeFolder(backendAnswering(about));
    expect(home.short('/srv/people/ann/projects/site')).toBe('/srv/people/ann/projects/site');
    await home.load();
    expect(home.short('/srv/people/ann/projects/site')).toBe('~/projects/site');
    expect(home.short('/srv/people/ann')).toBe('~');
    expect(home.short('/srv/people/anna')).toBe('/srv/people/anna');
  });

  it('joins a question in flight, keeps what it knew when one fails, and asks again after', async () => {
    const about = vi.fn(async () => ({ userHome: '/root', version: '0.1.0' }));
    const home = new HomeFolder(backendAnswering(about));
    await Promise.all([home.load(), home.load()]);
    expect(about).toHaveBeenCalledTimes(1);
    about.mockRejectedValueOnce(new ApiError('network', 'Conch is not reachable.'));
    await home.load();
    expect(home.path).toBe('/root');
    about.mockResolvedValueOnce({ userHome: '/home/me', version: '0.1.0' });
    await home.load();
    expect(home.short('/home/me/x')).toBe('~/x');
    expect(about).toHaveBeenCalledTimes(3);
  });
});
