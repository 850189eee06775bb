package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"conch/backend/internal/quantity"
)

// IncludeFile is where a repository lists, one a line, the files and
// folders it ignores but a build needs (.env, a local config), to be copied
// from the main working tree into each new worktree. Lines are paths or
// globs (*, ? and [...] within one path segment) relative to the
// repository's top; blank lines and lines starting with # are skipped.
const IncludeFile = ".conch/worktree-include"

// maxShown is how many names a line about skipped files lists.
const maxShown = 3

// include copies what IncludeFile lists from the main working tree at repo
// into the worktree, saying on out what it copied and why it skipped what
// it did. The list is read from the worktree (the committed one), else
// from the main working tree.
//
// Nothing outside the repository is read or written: absolute paths and
// ".." are refused, a link leading out of the repository is not copied,
// and both trees are opened as os.Roots, which no path or link escapes.
// Only files git ignores are copied, so none counts as the helper's work
// (Inspect leaves ignored files out); a tracked file is in the worktree
// already, and one git would see as untracked is left out and named.
// Nothing already in the worktree is overwritten, so a retry that finds
// its worktree kept loses no edit. Modes are kept. Only ctx ending makes
// it fail: a file it cannot copy is named and left out.
func (t Tree) include(ctx context.Context, repo string, out io.Writer) error {
	say := func(format string, args ...any) {
		if out != nil {
			fmt.Fprintf(out, IncludeFile+": "+format+"\n", args...)
		}
	}
	dst, err := os.OpenRoot(t.Path)
	if err != nil {
		return fmt.Errorf("worktree include: %w", err)
	}
	defer dst.Close()
	var src *os.Root
	if repo != "" && realPath(repo) != realPath(t.Path) {
		if src, err = os.OpenRoot(repo); err == nil {
			defer src.Close()
		}
	}
	list, ok := readIncludeList(dst, src, repo, say)
	if !ok {
		return nil
	}

	c := copier{src: src, dst: dst, repo: realPath(repo), say: say}
	for _, line := range strings.Split(string(list), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, name := range c.expand(line) {
			c.collect(name)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("worktree include: %w", err)
	}
	want := c.missing()
	if len(want) == 0 {
		return nil
	}
	return t.copyIgnored(ctx, &c, want, repo)
}

// readIncludeList reads the worktree's list of files to include, else the
// main working tree's (src). It is false, having said why when that is of
// use, when there is nothing to copy.
func readIncludeList(dst, src *os.Root, repo string, say func(string, ...any)) ([]byte, bool) {
	list, err := dst.ReadFile(filepath.FromSlash(IncludeFile))
	if errors.Is(err, fs.ErrNotExist) && src != nil {
		list, err = src.ReadFile(filepath.FromSlash(IncludeFile))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		say("could not be read, so nothing was copied: %s", why(err))
		return nil, false
	}
	if src == nil {
		say("the main working tree is not known, so nothing was copied")
		return nil, false
	}
	if _, err := src.Lstat(".git"); err != nil {
		say("%s has no working tree (a bare repository), so nothing was copied", repo)
		return nil, false
	}
	return list, true
}

// missing is what was found that the worktree lacks. What the worktree has
// already (from git: tracked; or copied before) stays as it is. A file
// under a link in the worktree is left out: git cannot say whether it
// ignores it, and the link may lead out.
func (c *copier) missing() []string {
	var want []string
	for _, name := range c.found {
		if _, err := c.dst.Lstat(filepath.FromSlash(name)); err == nil {
			continue
		}
		if link := c.underLink(name); link != "" {
			c.say("%s was not copied: %s is a link in the worktree", name, link)
			continue
		}
		want = append(want, name)
	}
	return want
}

// copyIgnored copies those of want that git ignores, and says what it
// copied and what it left because git would count it as work.
func (t Tree) copyIgnored(ctx context.Context, c *copier, want []string, repo string) error {
	ignored, err := t.ignored(ctx, want)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("worktree include: %w", ctx.Err())
		}
		c.say("git could not say which files it ignores, so nothing was copied: %v", err)
		return nil
	}
	var notIgnored []string
	copied := 0
	for _, name := range want {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("worktree include: %w", err)
		}
		if !ignored[name] {
			notIgnored = append(notIgnored, name)
			continue
		}
		if c.copy(name) {
			copied++
		}
	}
	if len(notIgnored) > 0 {
		c.say("%s not ignored by git, so not copied: in the worktree it would count as the helper's work (%s)",
			quantity.Plural(len(notIgnored), "file is", "files are"), shown(notIgnored))
	}
	if copied > 0 {
		c.say("copied %s from %s", quantity.Plural(copied, "file", "files"), repo)
	}
	return nil
}

// copier copies entries from the main working tree (src) into a worktree
// (dst), both opened as roots. Names are slash paths from the top.
type copier struct {
	src, dst *os.Root
	repo     string // src's real path
	say      func(format string, args ...any)
	found    []string // files and links to copy, in the order listed
	seen     map[string]bool
}

// expand turns one line of the list into the names it matches, saying why
// when it matches none.
func (c *copier) expand(line string) []string {
	name := strings.TrimPrefix(filepath.ToSlash(line), "./")
	name = strings.TrimSuffix(name, "/")
	if path.IsAbs(name) || filepath.IsAbs(line) || filepath.VolumeName(line) != "" {
		c.say("%s is not inside the repository (list paths from its top), so it was skipped", line)
		return nil
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			c.say("%s leads out of the repository, so it was skipped", line)
			return nil
		}
		if seg == "**" {
			c.say("%s: ** is not supported (a * matches within one folder), so it was skipped", line)
			return nil
		}
	}
	name = path.Clean(name)
	if name == "." || name == "" {
		c.say("%s names the whole repository, so it was skipped", line)
		return nil
	}
	if !strings.ContainsAny(name, "*?[\\") {
		if _, err := c.src.Lstat(filepath.FromSlash(name)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				c.say("%s is not in the main working tree, so it was skipped", line)
			} else {
				c.say("%s was skipped: %s", line, why(err))
			}
			return nil
		}
		return []string{name}
	}
	matches, err := fs.Glob(c.src.FS(), name)
	if err != nil {
		c.say("%s is not a pattern Conch can read (%v), so it was skipped", line, err)
		return nil
	}
	if len(matches) == 0 {
		c.say("nothing in the main working tree matches %s, so it was skipped", line)
	}
	return matches
}

// collect adds name, a file, link or folder (walked) from src, to found.
func (c *copier) collect(name string) {
	for _, seg := range strings.Split(name, "/") {
		if seg == ".git" {
			return // git's own, never a build's
		}
	}
	if c.seen[name] {
		return
	}
	fi, err := c.src.Lstat(filepath.FromSlash(name))
	if err != nil {
		c.say("%s was skipped: %s", name, why(err))
		return
	}
	switch {
	case fi.Mode().IsRegular():
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, ok := c.link(name); !ok {
			c.say("%s is a link leading out of the repository, so it was not copied", name)
			return
		}
	case fi.IsDir():
		f, err := c.src.Open(filepath.FromSlash(name))
		if err != nil {
			c.say("%s was skipped: %s", name, why(err))
			return
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			c.say("%s was skipped: %s", name, why(err))
			return
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			c.collect(name + "/" + e.Name())
		}
		return
	default:
		return // a socket, a device or a pipe is nothing to copy
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[name] = true
	c.found = append(c.found, name)
}

// link returns what the worktree's copy of the link name should point to,
// and false when the link leads out of the repository (or into its .git).
// A relative target stays as it is; an absolute one inside the repository
// is made relative, so the copy points into the worktree, not back into
// the main working tree.
func (c *copier) link(name string) (string, bool) {
	target, err := c.src.Readlink(filepath.FromSlash(name))
	if err != nil {
		return "", false
	}
	parent := filepath.Join(c.repo, filepath.FromSlash(path.Dir(name)))
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(parent, abs)
	}
	real := realPath(abs)
	rel, err := filepath.Rel(c.repo, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) ||
		rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
		return "", false
	}
	if !filepath.IsAbs(target) {
		return target, true
	}
	t, err := filepath.Rel(realPath(parent), real)
	if err != nil {
		return "", false
	}
	return t, true
}

// underLink returns the first folder on the way to name that is a link in
// the worktree, or "".
func (c *copier) underLink(name string) string {
	dir := path.Dir(name)
	if dir == "." {
		return ""
	}
	prefix := ""
	for _, seg := range strings.Split(dir, "/") {
		prefix = path.Join(prefix, seg)
		fi, err := c.dst.Lstat(filepath.FromSlash(prefix))
		if err != nil {
			return "" // not there yet: copy makes it
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return prefix
		}
	}
	return ""
}

// copy copies one file or link into the worktree, with its mode, unless
// the worktree has it already. It reports whether it copied it.
func (c *copier) copy(name string) bool {
	native := filepath.FromSlash(name)
	fi, err := c.src.Lstat(native)
	if err != nil {
		c.say("%s was not copied: %s", name, why(err))
		return false
	}
	if err := c.mkdirs(path.Dir(name)); err != nil {
		c.say("%s was not copied: %s", name, why(err))
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, ok := c.link(name)
		if !ok {
			c.say("%s is a link leading out of the repository, so it was not copied", name)
			return false
		}
		if err := c.dst.Symlink(target, native); err != nil {
			c.say("%s was not copied: %s", name, why(err))
			return false
		}
		return true
	}
	if err := c.copyFile(native, fi.Mode().Perm()); err != nil {
		_ = c.dst.Remove(native)
		c.say("%s was not copied: %s", name, why(err))
		return false
	}
	return true
}

// copyFile copies a regular file; the mode is set after the write, since
// the umask narrows the one the file is made with.
func (c *copier) copyFile(name string, perm fs.FileMode) error {
	in, err := c.src.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("it changed while it was being copied")
	}
	out, err := c.dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return c.dst.Chmod(name, perm)
}

// mkdirs makes the folders leading to a copied file, with the modes of the
// main working tree's.
func (c *copier) mkdirs(dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	native := filepath.FromSlash(dir)
	if fi, err := c.dst.Stat(native); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder in the worktree", dir)
		}
		return nil
	}
	if err := c.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	perm := fs.FileMode(0o755)
	if fi, err := c.src.Stat(native); err == nil {
		perm = fi.Mode().Perm() | 0o700 // we must be able to write into it
	}
	if err := c.dst.Mkdir(native, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// ignored returns which of names (slash paths from the top) git ignores in
// the worktree. Tracked files are never among them.
func (t Tree) ignored(ctx context.Context, names []string) (map[string]bool, error) {
	var in bytes.Buffer
	for _, n := range names {
		in.WriteString(n)
		in.WriteByte(0)
	}
	cmd := command(ctx, t.Path, "git", "check-ignore", "-z", "--stdin")
	cmd.Env = environ("LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// 1: none of them is ignored.
	if err != nil && !(cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1) {
		return nil, fmt.Errorf("git check-ignore: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	out := map[string]bool{}
	for _, n := range strings.Split(stdout.String(), "\x00") {
		if n != "" {
			out[n] = true
		}
	}
	return out, nil
}

// why is err in a few words for the task's output: the path is already on
// the line.
func why(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if strings.Contains(err.Error(), "escapes") {
		return "it leads out of the repository"
	}
	return err.Error()
}

// plural says n things ("1 file", "3 files").
// shown lists the first few names, and how many more.
func shown(names []string) string {
	if len(names) <= maxShown {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxShown], ", ") + fmt.Sprintf(" and %d more", len(names)-maxShown)
}
