package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/backend/internal/proctree"
)

// Command bounds: what the model gets back of a command's output (the first
// and last halves, the middle cut), and how long a command may run.
const (
	maxCommandOutput = 64 << 10
	defaultTimeout   = 10 * time.Minute
	maxTimeout       = time.Hour
	defaultGrace     = 1500 * time.Millisecond
)

var runCommand = Tool{
	Name: "run_command",
	Description: "Run a shell command with bash -c in the chat's folder and answer its output (stdout and stderr together; " +
		"at most 64 KiB, the middle cut) and exit code. timeout_seconds defaults to 600.",
	Schema: schema([]string{"command"}, `"command":{"type":"string"},`+
		`"timeout_seconds":{"type":"integer","minimum":1,"maximum":3600}`),
	Effect: Command,
	Title:  titleOf("Run", "command"),
	Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			Command        string `json:"command"`
			TimeoutSeconds int    `json:"timeout_seconds"`
		}
		if err := decode("run_command", args, &a, "command"); err != nil {
			return "", err
		}
		timeout := defaultTimeout
		if a.TimeoutSeconds < 0 || time.Duration(a.TimeoutSeconds)*time.Second > maxTimeout {
			return "", errors.New("run_command: timeout_seconds must be between 1 and 3600")
		} else if a.TimeoutSeconds > 0 {
			timeout = time.Duration(a.TimeoutSeconds) * time.Second
		}
		dir, err := Resolve(env.Dir, "")
		if err != nil {
			return "", err
		}
		return run(ctx, env, dir, a.Command, timeout)
	},
}

// run runs command in its own process group, sending its output to the
// chat's log and a bounded buffer. Cancelling ctx (stop) or the timeout sends
// SIGTERM to the group, then SIGKILL after the grace period.
func run(ctx context.Context, env Env, dir, command string, timeout time.Duration) (string, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "", errors.New("run_command: bash was not found on PATH")
	}
	grace := env.Grace
	if grace <= 0 {
		grace = defaultGrace
	}
	buf := &bounded{max: maxCommandOutput}
	var out io.Writer = buf
	if env.Log != nil {
		fmt.Fprintf(env.Log, "\n$ %s\n", command)
		out = io.MultiWriter(buf, &safeWriter{w: env.Log})
	}
	cmd := exec.Command(bash, "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env.Extra...)
	cmd.Stdout, cmd.Stderr = out, out
	// A background child holding the pipe open must not hold the call open
	// once bash itself has exited.
	cmd.WaitDelay = time.Second
	// The command's whole tree (its group and anything that moved to a
	// session of its own) carries this run's mark, so a stop ends it all.
	tree, err := proctree.Start(cmd, env.Mark.WithRun())
	if err != nil {
		return "", fmt.Errorf("run_command: start: %w", err)
	}
	defer tree.Release()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	why := ""
	select {
	case <-exited:
	case <-ctx.Done():
		why = "stopped"
	case <-timer.C:
		why = fmt.Sprintf("timed out after %s", timeout)
	}
	if why != "" {
		tree.Stop(grace, exited)
		<-exited
	}
	// Whatever the command left behind goes with it.
	tree.End()
	text := buf.String()
	if env.Log != nil && why != "" {
		fmt.Fprintf(env.Log, "[%s]\n", why)
	}
	if why != "" {
		if ctx.Err() != nil {
			return text, fmt.Errorf("%s\n[stopped]: %w", text, ctx.Err())
		}
		return "", fmt.Errorf("%s\n[%s]", text, why)
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "", fmt.Errorf("%s\n[killed by signal %d]", text, int(ws.Signal()))
	}
	if code != 0 {
		return "", fmt.Errorf("%s\n[exit code %d]", text, code)
	}
	if text == "" {
		return "[exit code 0, no output]", nil
	}
	return text + "\n[exit code 0]", nil
}

// bounded keeps the first and last max/2 bytes written and counts the rest.
type bounded struct {
	mu    sync.Mutex
	max   int
	head  []byte
	tail  []byte // the last max/2 bytes after head filled
	total int64
}

func (b *bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	half := b.max / 2
	rest := p
	if room := half - len(b.head); room > 0 {
		n := min(room, len(rest))
		b.head = append(b.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) > 0 {
		b.tail = append(b.tail, rest...)
		if len(b.tail) > half {
			b.tail = append(b.tail[:0:0], b.tail[len(b.tail)-half:]...)
		}
	}
	return len(p), nil
}

// String is the output, with a line saying how much of the middle was cut.
func (b *bounded) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	cut := b.total - int64(len(b.head)) - int64(len(b.tail))
	if cut <= 0 {
		return strings.ToValidUTF8(string(b.head)+string(b.tail), "\uFFFD")
	}
	return strings.ToValidUTF8(string(b.head), "\uFFFD") +
		fmt.Sprintf("\n… (%d bytes cut; the whole output is in the chat's command log) …\n", cut) +
		strings.ToValidUTF8(string(b.tail), "\uFFFD")
}

// safeWriter serialises writes from stdout and stderr to one log.
type safeWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
