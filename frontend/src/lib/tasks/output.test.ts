import { describe, expect, it, vi } from 'vitest';
import type { Backend } from '../backend/backend';
import { OutputTail } from './output.svelte';
import { tailLimit } from './tail';

/** A log of text the test grows; readOutput serves byte-free slices of it (ASCII only). */
function logBackend() {
  const log = { text: '' };
  const readOutput = vi.fn(async (_id: string, offset: number) => ({ data: log.text.slice(offset, offset + 1000), next: Math.min(log.text.length, offset + 1000) }));
  return { log, readOutput, backend: { readOutput } as unknown as Backend };
}

describe('OutputTail', () => {
  it('reads only what was added', async () => {
    const { log, readOutput, backend } = logBackend();
    const tail = new OutputTail(backend, 't');
    log.text = 'one\n';
    tail.sync(4);
    await vi.waitFor(() => expect(tail.text).toBe('one\n'));
    log.text += 'two\n';
    tail.sync(8);
    await vi.waitFor(() => expect(tail.text).toBe('one\ntwo\n'));
    expect(readOutput.mock.calls.map((c) => c[1])).toEqual([0, 4]);
  });

  it('starts near the end of a long log', async () => {
    const { log, readOutput, backend } = logBackend();
    log.text = 'x'.repeat(tailLimit * 2);
    const tail = new OutputTail(backend, 't');
    tail.sync(log.text.length);
    await vi.waitFor(() => expect(tail.text.length).toBe(tailLimit));
    expect(tail.cut).toBe(true);
    expect(readOutput.mock.calls[0]?.[1]).toBe(tailLimit);
  });

  it('starts over when the log shrinks', async () => {
    const { log, backend } = logBackend();
    const tail = new OutputTail(backend, 't');
    log.text = 'first run\n';
    tail.sync(log.text.length);
    await vi.waitFor(() => expect(tail.text).toBe('first run\n'));
    log.text = 'new\n';
    tail.sync(log.text.length);
    await vi.waitFor(() => expect(tail.text).toBe('new\n'));
  });

  it('reads what was announced ahead of the record, and a record behind it takes nothing back', async () => {
    const { log, readOutput, backend } = logBackend();
    const tail = new OutputTail(backend, 't');
    tail.grew(4); // not shown yet: nothing read
    expect(readOutput).not.toHaveBeenCalled();
    log.text = 'one\n';
    tail.sync(4);
    await vi.waitFor(() => expect(tail.text).toBe('one\n'));
    log.text += 'two\n';
    tail.grew(8);
    await vi.waitFor(() => expect(tail.text).toBe('one\ntwo\n'));
    tail.sync(4); // the record's save, behind the announcement
    tail.sync(8);
    await new Promise((r) => setTimeout(r, 10));
    expect(tail.text).toBe('one\ntwo\n');
    expect(readOutput.mock.calls.map((c) => c[1])).toEqual([0, 4]);
  });

  it('starts over when a run announces less than the last', async () => {
    const { log, backend } = logBackend();
    const tail = new OutputTail(backend, 't');
    log.text = 'first run\n';
    tail.sync(log.text.length);
    tail.grew(log.text.length);
    await vi.waitFor(() => expect(tail.text).toBe('first run\n'));
    log.text = 'new\n';
    tail.grew(log.text.length);
    tail.sync(log.text.length);
    await vi.waitFor(() => expect(tail.text).toBe('new\n'));
  });
});
