import { describe, expect, it } from 'vitest';
import { HostStatus } from '../backend/contract';
import { hostIdFor, hostStatusWords, hostTone, hostWhere } from './hosts';

describe('hostStatusWords', () => {
  it('says every status in words', () => {
    expect(hostStatusWords(HostStatus.HostNew)).toBe('Not tested yet');
    expect(hostStatusWords(HostStatus.HostReady)).toBe('Ready');
    expect(hostStatusWords(HostStatus.HostUnknownKey)).toBe('Its key waits for your OK');
    expect(hostStatusWords(HostStatus.HostKeyChanged)).toBe('Its key changed: refused');
    expect(hostStatusWords(HostStatus.HostNoKey)).toBe('Wants a password: set up a key');
    expect(hostStatusWords(HostStatus.HostUnreachable)).toBe('Unreachable');
    for (const s of Object.values(HostStatus)) expect(hostStatusWords(s)).not.toBe(s);
  });
  it('passes an unknown one on as it came', () => {
    expect(hostStatusWords('sleepy' as HostStatus)).toBe('sleepy');
  });
});

describe('hostTone', () => {
  it('tells good from waiting from bad', () => {
    expect(hostTone(HostStatus.HostReady)).toBe('ok');
    expect(hostTone(HostStatus.HostUnknownKey)).toBe('ask');
    expect(hostTone(HostStatus.HostUnreachable)).toBe('bad');
    expect(hostTone(HostStatus.HostNew)).toBe('plain');
  });
});

describe('hostWhere', () => {
  it('is empty until a test found who Conch is there', () => {
    expect(hostWhere({})).toBe('');
    expect(hostWhere({ user: 'me' })).toBe('me');
    expect(hostWhere({ user: 'me', home: '/home/me' })).toBe('me in /home/me');
  });
});

describe('hostIdFor', () => {
  it('makes an id as conch hosts add does', () => {
    expect(hostIdFor('devbox')).toBe('devbox');
    expect(hostIdFor('Build Box!')).toBe('build-box');
    expect(hostIdFor('--a__b--')).toBe('a-b');
    expect(hostIdFor('!!!')).toBe('');
    expect(hostIdFor('x'.repeat(39) + ' y')).toBe('x'.repeat(39));
  });
});
