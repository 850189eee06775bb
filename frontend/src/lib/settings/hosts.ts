// What Settings → Hosts says of a host: its status in words, where Conch
// signs in there, and the id a new host gets from its name.

import { HostStatus, type Host } from '../backend/contract';

const words: Record<HostStatus, string> = {
  [HostStatus.HostNew]: 'Not tested yet',
  [HostStatus.HostReady]: 'Ready',
  [HostStatus.HostUnknownKey]: 'Its key waits for your OK',
  [HostStatus.HostKeyChanged]: 'Its key changed: refused',
  [HostStatus.HostNoKey]: 'Wants a password: set up a key',
  [HostStatus.HostUnreachable]: 'Unreachable',
};

/** The host's status for a person (an unknown one as it came). */
export function hostStatusWords(s: HostStatus): string {
  return words[s] ?? s;
}

/** The tone of the status's chip: good, waiting on the person, or bad. */
export function hostTone(s: HostStatus): 'ok' | 'ask' | 'bad' | 'plain' {
  switch (s) {
    case HostStatus.HostReady:
      return 'ok';
    case HostStatus.HostUnknownKey:
    case HostStatus.HostNoKey:
      return 'ask';
    case HostStatus.HostKeyChanged:
    case HostStatus.HostUnreachable:
      return 'bad';
    default:
      return 'plain';
  }
}

/** Who Conch signs in as there and in which home ("me in /home/me"), "" before a test found it. */
export function hostWhere(h: Pick<Host, 'user' | 'home'>): string {
  if (!h.user) return '';
  return h.home ? `${h.user} in ${h.home}` : h.user;
}

/** The id a new host called name gets: lower case, every run of other characters a dash, at most 40 (as `conch hosts add`). */
export function hostIdFor(name: string): string {
  let id = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (id.length > 40) id = id.slice(0, 40).replace(/-+$/, '');
  return id;
}
