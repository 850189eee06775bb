package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"conch/backend/internal/procgroup"
)

// SetupScript is where a repository keeps the script that prepares each new
// worktree (install dependencies, copy env files), relative to its top.
const SetupScript = ".conch/worktree-setup"

// setupTail is how many of the script's last lines a failure carries.
const setupTail = 20

// Setup prepares a new worktree, saying what it does on out (which may be
// nil; a task's output). First it copies in what .conch/worktree-include
// lists (see IncludeFile) from the main working tree; then it runs the
// worktree's .conch/worktree-setup, if it exists and is executable, in the
// worktree's top folder. ctx bounds how long it may take: when ctx ends the
// script and everything it started are killed. The script finds the main
// repository in CONCH_REPO (to copy env files from), and the worktree,
// branch and base in CONCH_WORKTREE, CONCH_BRANCH and CONCH_BASE. A
// failure returns ErrSetup with the last lines the script printed.
//
// Nothing it leaves running outlives it: its process group is killed when
// it ends.
func (t Tree) Setup(ctx context.Context, out io.Writer) error {
	if t.Repo == "" {
		// Rebuilt from a record: found again from the worktree.
		if repo, err := t.repo(ctx); err == nil {
			t.Repo = repo
		}
	}
	if err := t.include(ctx, t.Repo, out); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	script := filepath.Join(t.Path, filepath.FromSlash(SetupScript))
	fi, err := os.Stat(script)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("worktree setup: %w", err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		if out != nil {
			fmt.Fprintf(out, "%s is not executable, so it was not run\n", SetupScript)
		}
		return nil
	}
	tail := &tailBuffer{max: 16 << 10}
	w := &tee{out: out, tail: tail}
	cmd := command(ctx, t.Path, script)
	cmd.Env = environ(append([]string{
		"CONCH_REPO=" + t.Repo,
		"CONCH_WORKTREE=" + t.Path,
		"CONCH_BRANCH=" + t.Branch,
		"CONCH_BASE=" + t.Base,
	}, t.Env...)...)
	// One writer for both streams, so exec copies them in one goroutine.
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	if err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrSetup, SetupScript, err)
	}
	err = cmd.Wait()
	procgroup.Signal(cmd.Process.Pid, syscall.SIGKILL)
	// A background child that kept the output open is no failure of the
	// script's own.
	if err == nil || errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success() {
		return nil
	}
	why := err.Error()
	if ctx.Err() != nil {
		why = "stopped: " + ctx.Err().Error()
	}
	msg := fmt.Sprintf("%s: %s", SetupScript, why)
	if last := tail.lastLines(setupTail); last != "" {
		msg += "; its last output:\n" + last
	} else {
		msg += " (it printed nothing)"
	}
	return fmt.Errorf("%w: %s", ErrSetup, msg)
}

// tee copies the script's output to out, when there is one, and to tail. A
// failing out must not fail the script, so its errors are dropped.
type tee struct {
	out  io.Writer
	tail *tailBuffer
}

func (t *tee) Write(p []byte) (int, error) {
	if t.out != nil {
		_, _ = t.out.Write(p)
	}
	return t.tail.Write(p)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// lastLines returns the last n lines kept, without trailing blank space.
func (b *tailBuffer) lastLines(n int) string {
	b.mu.Lock()
	s := strings.TrimRight(string(b.buf), " \t\r\n")
	b.mu.Unlock()
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
