// Short forms of what a card would otherwise show in full: a folder with
// the person's home folder as ~ and a helper's worktree by its short id, a
// task id as its last eight characters, a helper's branch as
// conch/<last eight>. The full form stays in the title and is what the
// copy button copies.

const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const uuidAt = new RegExp(uuid, 'gi');
const wholeUuid = new RegExp(`^${uuid}$`, 'i');
/** A helper's worktree, <Conch's home>/worktrees/<task id>, named by its task's id. */
const worktreeAt = new RegExp(`((?:^|[\\\\/])worktrees[\\\\/])(${uuid})(?=$|[\\\\/])`, 'i');

/** Reports whether home is a Windows path (C:\Users\ann, \\server\share\ann): its case and its slashes do not matter. */
function isWindows(home: string): boolean {
  return /^([A-Za-z]:[\\/]|\\\\)/.test(home);
}

/**
 * A folder as every surface shows it: the person's home folder (home, as
 * GET /api/about says it; '' when not known) as ~, a folder under it as
 * ~/…, a helper's worktree by its task's short id
 * (~/.conch/worktrees/3f4a5b6c). A folder that only starts with the same
 * letters (/root2 for /root) stays as it is; '' stays ''.
 */
export function shortPath(p: string, home: string): string {
  const out = p.replace(worktreeAt, (_, before: string, id: string) => before + shortId(id));
  const win = isWindows(home);
  const h = home.replace(win ? /[\\/]+$/ : /\/+$/, '');
  if (h === '' || (win && /^[A-Za-z]:$/.test(h))) return out; // a home at the root shortens nothing
  const same = win ? (a: string, b: string) => a.replace(/\//g, '\\').toLowerCase() === b.replace(/\//g, '\\').toLowerCase() : (a: string, b: string) => a === b;
  if (!same(out.slice(0, h.length), h)) return out;
  const rest = out.slice(h.length);
  if (rest === '') return '~';
  return (win ? /^[\\/]/ : /^\//).test(rest) ? '~' + rest : out;
}

/** A path at the start of a sentence's word: /…, \\…, C:\… or C:/…. */
const pathIn = /(^|[\s(`'"])((?:[A-Za-z]:)?[\\/][^\s`'"()]*)/g;

/** Every path in a sentence the server wrote ("Database: /root/.conch/conch.db") as shortPath writes it ("Database: ~/.conch/conch.db"). */
export function shortPathsIn(text: string, home: string): string {
  return text.replace(pathIn, (_, before: string, p: string) => before + shortPath(p, home));
}

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

/** A branch with every uuid in it cut to its last eight characters: conch/3f4a5b6c. */
export function shortIds(s: string): string {
  return s.replace(uuidAt, (u) => u.slice(-8));
}

/**
 * Why a folder typed in the composer cannot be sent ('' when it can): empty
 * is the home folder; here a full path, on a host (hostName) a full path
 * there or one under ~.
 */
export function folderProblem(cwd: string, hostName = ''): string {
  const c = cwd.trim();
  if (c === '') return '';
  if (hostName !== '') {
    return /^(~$|~\/|\/)/.test(c) ? '' : `Use a full path there, or one starting with ~/ for your home folder on ${hostName}.`;
  }
  return /^(\/|[A-Za-z]:[\\/])/.test(c) ? '' : 'Use a full path starting with /, or leave it empty for your home folder.';
}
