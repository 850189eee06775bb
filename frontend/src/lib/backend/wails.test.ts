import { describe, expect, it, vi } from 'vitest';
import { pickBackend } from './index';
import { HttpBackend } from './http';
import { WailsBackend, wailsEventName, type AppBindings, type WailsRuntime } from './wails';

function bindings(over: Partial<AppBindings> = {}): AppBindings {
  const no = () => Promise.reject(new Error('not in this test'));
  return {
    ListTasks: no,
    CreateTask: no,
    GetTask: no,
    ReadOutput: no,
    StopTask: no,
    RetryTask: no,
    DeleteTask: no,
    AnswerTask: no,
    ...over,
  };
}

describe('WailsBackend', () => {
  it('is picked when the window has bindings, else HTTP', () => {
    expect(pickBackend({ go: { main: { App: bindings() } } } as unknown as Window)).toBeInstanceOf(WailsBackend);
    expect(pickBackend({} as Window)).toBeInstanceOf(HttpBackend);
  });

  it('reads the JSON error a binding rejects with', async () => {
    const b = new WailsBackend(bindings({ StopTask: () => Promise.reject('{"error":{"code":"invalid_transition","message":"Task is done."}}') }), undefined);
    await expect(b.stopTask('x')).rejects.toMatchObject({ code: 'invalid_transition', message: 'Task is done.' });
  });

  it('passes events on and reloads when the bridge says so', async () => {
    let handler: (...data: unknown[]) => void = () => {};
    const off = vi.fn();
    const runtime: WailsRuntime = {
      EventsOn: (name, cb) => {
        expect(name).toBe(wailsEventName);
        handler = cb;
        return off;
      },
    };
    const events: unknown[] = [];
    let reloads = 0;
    const stop = new WailsBackend(bindings(), runtime).subscribe(
      (e) => events.push(e),
      () => reloads++,
    );
    await Promise.resolve();
    expect(reloads).toBe(1); // the first load lines up as over HTTP
    handler({ type: 'task.deleted', id: 'a' });
    handler({ type: 'reload' });
    handler({ type: 'conversation.changed' });
    expect(events).toEqual([{ type: 'task.deleted', id: 'a' }]);
    expect(reloads).toBe(2);
    stop();
    expect(off).toHaveBeenCalled();
  });
});
