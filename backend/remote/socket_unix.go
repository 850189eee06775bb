//go:build unix

package remote

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Socket is the runner's listening Unix socket with its locked pid file.
// Close ends both.
type Socket struct {
	ln   *net.UnixListener
	path string
	pid  *os.File
}

// Listen takes the Unix socket at path for this process. The socket's
// folder is made, and kept, 0700; the socket is 0600. While another live
// runner holds path it refuses with ErrHeld, naming that runner's pid; a
// socket no live runner holds (one that was killed) is replaced.
func Listen(path string) (*Socket, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("socket %q: give an absolute path", path)
	}
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	pid, err := lockPid(path + PidSuffix)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	ln, err := listenFresh(path)
	if err != nil {
		pid.Close()
		return nil, err
	}
	if err := writePid(pid); err != nil {
		ln.Close()
		pid.Close()
		return nil, fmt.Errorf("write the runner's pid file: %w", err)
	}
	return &Socket{ln: ln, path: path, pid: pid}, nil
}

// privateDir makes dir (and its parents) and leaves it 0700, owned by
// this user: nobody else may even find the socket inside.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the socket's folder: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the socket's folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the socket's folder %s is not a folder", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("the socket's folder %s belongs to another user (uid %d); pick a folder of your own", dir, st.Uid)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make the socket's folder private: %w", err)
		}
	}
	return nil
}

// lockPid opens the pid file and locks it; a lock held elsewhere is a
// live runner, whose pid is read from the file.
func lockPid(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the pid file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				return nil, fmt.Errorf("%w, process %d; stop it first (kill -TERM %d), or give another --socket", ErrHeld, pid, pid)
			}
			return nil, fmt.Errorf("%w; stop it first, or give another --socket", ErrHeld)
		}
		return nil, fmt.Errorf("lock the pid file: %w", err)
	}
	return f, nil
}

// listenFresh removes a stale socket at path (never anything else) and
// listens there, 0600.
func listenFresh(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("socket %s: something that is not a socket is there; move it away or give another --socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("replace the stale socket %s: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Close must not remove a socket another runner took after this one
	// (it cannot while this one holds the lock, but Close removes it
	// itself, before letting the lock go).
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("make the socket private: %w", err)
	}
	return ln, nil
}

func writePid(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Listener is the socket to serve on.
func (s *Socket) Listener() net.Listener { return s.ln }

// Path is where the socket is.
func (s *Socket) Path() string { return s.path }

// Close stops listening, removes the socket and the pid file, and lets
// the lock go, in that order; safe twice.
func (s *Socket) Close() error {
	if s.pid == nil {
		return nil
	}
	err := s.ln.Close()
	if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	_ = os.Remove(s.path + PidSuffix)
	_ = s.pid.Close()
	s.pid = nil
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
