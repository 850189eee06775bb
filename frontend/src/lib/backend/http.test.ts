import { describe, expect, it } from 'vitest';
import { backoffDelay, eventsURL } from './http';
import { parseEvent } from './event';
import { leadingPartial, trailingPartial } from './utf8';

const enc = (s: string) => new TextEncoder().encode(s);

describe('utf8 ranges', () => {
  it('finds a cut character at the end', () => {
    const b = enc('ab€'); // € is 3 bytes
    expect(trailingPartial(b)).toBe(0);
    expect(trailingPartial(b.subarray(0, 4))).toBe(2);
    expect(trailingPartial(b.subarray(0, 3))).toBe(1);
    expect(trailingPartial(enc('plain'))).toBe(0);
    expect(trailingPartial(enc('😀'))).toBe(0);
    expect(trailingPartial(enc('😀').subarray(0, 3))).toBe(3);
  });

  it('skips a cut character at the start', () => {
    const b = enc('€x');
    expect(leadingPartial(b)).toBe(0);
    expect(leadingPartial(b.subarray(1))).toBe(2);
    expect(leadingPartial(b.subarray(2))).toBe(1);
  });
});

describe('event stream', () => {
  it('builds the URL from the page', () => {
    expect(eventsURL({ protocol: 'http:', host: '127.0.0.1:4000' })).toBe('ws://127.0.0.1:4000/api/events');
    expect(eventsURL({ protocol: 'https:', host: 'localhost:1' })).toBe('wss://localhost:1/api/events');
  });

  it('backs off, doubling to a ceiling', () => {
    const full = () => 1;
    expect(backoffDelay(0, full)).toBe(500);
    expect(backoffDelay(1, full)).toBe(1000);
    expect(backoffDelay(10, full)).toBe(10_000);
    expect(backoffDelay(0, () => 0)).toBe(250);
  });

  it('parses events and drops unknown ones', () => {
    expect(parseEvent('{"type":"task.deleted","id":"x"}')).toEqual({ type: 'task.deleted', id: 'x' });
    expect(parseEvent('{"type":"task.changed","task":{"id":"x","rev":2}}')).toMatchObject({ type: 'task.changed' });
    expect(parseEvent('{"type":"task.changed","task":{"id":"x"}}')).toBeNull();
    expect(parseEvent('{"type":"conversation.changed"}')).toBeNull();
    expect(parseEvent('nope')).toBeNull();
  });
});
