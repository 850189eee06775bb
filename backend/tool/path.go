package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutside is returned for a path that leads outside the chat's folder,
// by `..`, by an absolute path or through a symbolic link.
var ErrOutside = errors.New("outside the chat's folder")

// Resolve turns p (relative to dir, or absolute) into a real path inside
// dir. Symbolic links are followed: through the deepest part of the path
// that exists, so a link that points back into the folder is fine and one
// that leads out is refused, even when the rest does not exist yet.
func Resolve(dir, p string) (string, error) {
	dir = filepath.Clean(dir)
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("the chat's folder %s cannot be used: %w", dir, err)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q holds a NUL byte", p)
	}
	cand := p
	if cand == "" {
		cand = "."
	}
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(dir, cand)
	}
	cand = filepath.Clean(cand)
	if !within(dir, cand) && !within(root, cand) {
		return "", fmt.Errorf("path %q is %w (%s); use a path inside it", p, ErrOutside, dir)
	}
	// Find the deepest part that exists and resolve its links; what is
	// left does not exist, so it holds no links.
	existing, rest := cand, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", fmt.Errorf("path %q: %w", p, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	real = filepath.Join(real, rest)
	if !within(root, real) {
		return "", fmt.Errorf("path %q leads %w (%s) through a symbolic link; use a path inside it", p, ErrOutside, dir)
	}
	return real, nil
}

// within reports whether p is root or inside it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// relTo names p relative to the real folder root for the model ("." for
// the folder itself).
func relTo(root, p string) string {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}
