import { describe, expect, it, vi } from 'vitest';
import { attachmentName } from './download';
import { HttpBackend } from './http';
import { WailsBackend, type AppBindings } from './wails';

describe('attachmentName', () => {
  it('reads the filename of a download, never a path', () => {
    expect(attachmentName('attachment; filename=conch-backup-20261201-120000.db')).toBe('conch-backup-20261201-120000.db');
    expect(attachmentName('attachment; filename="conch backup.tar"')).toBe('conch backup.tar');
    expect(attachmentName("attachment; filename*=UTF-8''b%C3%A4ckup.db")).toBe('bäckup.db');
    expect(attachmentName('attachment; filename="../../etc/passwd"')).toBeNull();
    expect(attachmentName('attachment; filename=a\\b')).toBeNull();
    expect(attachmentName('attachment')).toBeNull();
    expect(attachmentName(null)).toBeNull();
  });
});

describe('saveBackup', () => {
  it('downloads GET /api/backup with the token, under the name the server gives', async () => {
    const fetchMock = vi.fn(
      async (_path: string, _init?: RequestInit) =>
        new Response(new Uint8Array([1, 2, 3, 4]), { status: 200, headers: { 'Content-Disposition': 'attachment; filename=conch-backup-20261201-120000.tar' } }),
    );
    vi.stubGlobal('fetch', fetchMock);
    try {
      const save = vi.fn();
      const got = await new HttpBackend('', 'tok').saveBackup(true, save);
      expect(got).toEqual({ path: '', name: 'conch-backup-20261201-120000.tar', bytes: 4, tar: true });
      const [path, init] = fetchMock.mock.calls[0] ?? [];
      expect(path).toBe('/api/backup?output=1');
      expect(init).toMatchObject({ method: 'GET', credentials: 'omit', headers: expect.objectContaining({ Authorization: 'Bearer tok' }) });
      expect(save).toHaveBeenCalledWith(expect.any(Blob), 'conch-backup-20261201-120000.tar');
      await new HttpBackend('', 'tok').saveBackup(false, save);
      expect(fetchMock.mock.calls[1]?.[0]).toBe('/api/backup');
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('says so when the server refuses or the download breaks off', async () => {
    const save = vi.fn();
    vi.stubGlobal('fetch', async () => new Response('{"error":{"code":"not_found","message":"Backups are not available here"}}', { status: 404 }));
    try {
      await expect(new HttpBackend().saveBackup(false, save)).rejects.toMatchObject({ code: 'not_found', message: 'Backups are not available here' });
    } finally {
      vi.unstubAllGlobals();
    }
    const broken = new ReadableStream({
      start(c) {
        c.enqueue(new Uint8Array([1]));
        c.error(new TypeError('network error'));
      },
    });
    vi.stubGlobal('fetch', async () => new Response(broken, { status: 200 }));
    try {
      await expect(new HttpBackend().saveBackup(false, save)).rejects.toMatchObject({ code: 'network', message: expect.stringContaining('broke off') });
      expect(save).not.toHaveBeenCalled();
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('has the window save it through its binding', async () => {
    const saved = { path: '/home/me/Downloads/conch-backup-1.db', name: 'conch-backup-1.db', bytes: 9, tar: false };
    const SaveBackup = vi.fn(async () => saved);
    const b = new WailsBackend({ SaveBackup } as unknown as AppBindings, undefined);
    expect(await b.saveBackup(false)).toEqual(saved);
    expect(SaveBackup).toHaveBeenCalledWith(false);
  });
});
