// Short forms of what a card would otherwise show in full: a folder with
// the home folder as ~, a task id as its first eight characters, a
// helper's branch as conch/<first eight>. The full form stays in the
// title and is what the copy button copies.

/** The home folder at the start of an absolute path: /home/me, /Users/me, /root, C:\Users\me. */
const homeAt = /^(\/home\/[^/]+|\/Users\/[^/]+|\/root|[A-Za-z]:\\Users\\[^\\]+)(?=$|[/\\])/;

/** A folder with the home folder written as ~ ("~/src/app"); '' stays ''. */
export function shortPath(p: string): string {
  return p.replace(homeAt, '~');
}

const uuidAt = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** An id's first eight characters ("54b78ca4"), which are enough to tell tasks apart. */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}

/** A branch or a path with every uuid in it cut to its first eight characters: conch/54b78ca4. */
export function shortIds(s: string): string {
  return s.replace(uuidAt, (u) => u.slice(0, 8));
}

/** A worktree's folder as a card shows it: ~ for home, short ids (~/.conch/worktrees/54b78ca4). */
export function shortWorktree(p: string): string {
  return shortIds(shortPath(p));
}
