// Short forms of what a card would otherwise show in full: a folder with
// the home folder as ~, a task id as its last eight characters, a
// helper's branch as conch/<last eight>. The full form stays in the
// title and is what the copy button copies.

/** The home folder at the start of an absolute path: /home/me, /Users/me, /root, C:\Users\me. */
const homeAt = /^(\/home\/[^/]+|\/Users\/[^/]+|\/root|[A-Za-z]:\\Users\\[^\\]+)(?=$|[/\\])/;

/** A folder with the home folder written as ~ ("~/src/app"); '' stays ''. */
export function shortPath(p: string): string {
  return p.replace(homeAt, '~');
}

const uuidAt = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const wholeUuid = new RegExp(`^${uuidAt.source}$`, 'i');

/**
 * A uuid's last eight characters ("3f4a5b6c"), which are random and enough
 * to tell tasks apart; its first ones are the time it was made (a version 7
 * uuid), the same for every task made within a minute. Another id longer
 * than eight characters is cut to its first eight.
 */
export function shortId(id: string): string {
  if (wholeUuid.test(id)) return id.slice(-8);
  return id.length > 8 ? id.slice(0, 8) : id;
}

/** A branch or a path with every uuid in it cut to its last eight characters: conch/3f4a5b6c. */
export function shortIds(s: string): string {
  return s.replace(uuidAt, (u) => u.slice(-8));
}

/** A worktree's folder as a card shows it: ~ for home, short ids (~/.conch/worktrees/3f4a5b6c). */
export function shortWorktree(p: string): string {
  return shortIds(shortPath(p));
}
