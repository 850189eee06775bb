package agentcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"conch/backend/internal/procgroup"
	"conch/backend/internal/proctree"
	"conch/backend/procmark"
	"conch/backend/provider"
)

// handler reads one CLI's lines. line is called for every JSON object
// line in order, from one goroutine; a non-nil error ends the stream with
// it (and stops the CLI). finish gives the last event once the CLI has
// exited and its output is read.
type handler interface {
	line(raw []byte) error
	finish(exit exitStatus) provider.Event
}

// releaser is a handler that holds something for the run (Claude's
// question server): serve releases it once the CLI has exited, before
// the last event is sent, however the run ended.
type releaser interface {
	release()
}

// exitStatus is how the CLI ended.
type exitStatus struct {
	code   int    // -1 when killed by a signal
	signal string // the signal's name when killed
	stderr string // the last lines it wrote on stderr
}

// failure describes an exit with no outcome on stdout, for an error.
func (e exitStatus) failure(name string) error {
	var msg string
	if e.signal != "" {
		msg = fmt.Sprintf("%s was killed by %s", name, e.signal)
	} else {
		msg = fmt.Sprintf("%s exited with code %d", name, e.code)
	}
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return errors.New(msg)
}

// proc is one running CLI.
type proc struct {
	name  string
	cmd   *exec.Cmd
	tree  *proctree.Tree
	out   *bufio.Reader
	errs  *tail
	grace time.Duration

	stdin     io.WriteCloser
	stdinMu   sync.Mutex
	stdinDone bool

	exited chan struct{} // closed once the process has been waited for
	stop   sync.Once
}

// start starts the CLI in dir with input written on its stdin, which is
// closed after it, unless keep says stdin stays open for a conversation.
func start(cfg Config, name, bin string, args []string, dir string, mark procmark.Mark, input []byte, keep bool) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = cfg.environ()
	// A child that escaped the group and holds stdout open must not keep
	// the stream open once the CLI itself has exited.
	cmd.WaitDelay = time.Second
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	p := &proc{
		name:   name,
		cmd:    cmd,
		out:    bufio.NewReaderSize(pr, 64<<10),
		errs:   &tail{},
		grace:  cfg.grace(),
		exited: make(chan struct{}),
	}
	cmd.Stderr = p.errs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p.stdin = stdin
	// The run's mark goes to the CLI and so to every tool it runs, even
	// one it starts in a session of its own: a stop ends them all.
	tree, err := proctree.Start(cmd, mark.WithRun())
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.tree = tree
	go func() {
		_ = cmd.Wait()
		// What the CLI left running (a tool's background child) goes with it.
		tree.End()
		tree.Release()
		pw.Close()
		close(p.exited)
	}()
	if keep {
		return p, nil
	}
	go func() {
		// Written apart from reading so a CLI that prints before it reads
		// cannot deadlock with us.
		if len(input) > 0 {
			_ = p.write(input)
		}
		p.closeStdin()
	}()
	return p, nil
}

// write sends one message on the CLI's stdin, unless stdin is closed.
func (p *proc) write(b []byte) error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdinDone {
		return io.ErrClosedPipe
	}
	_, err := p.stdin.Write(b)
	return err
}

// closeStdin tells the CLI no more input comes; safe more than once.
func (p *proc) closeStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if !p.stdinDone {
		p.stdinDone = true
		p.stdin.Close()
	}
}

// terminate sends SIGTERM to the CLI's whole tree (its tools too, even
// one in a session of its own), then SIGKILL after the grace period; it
// returns at once.
func (p *proc) terminate() {
	p.stop.Do(func() {
		go p.tree.Stop(p.grace, p.exited)
	})
}

// isExited reports whether the process has been waited for.
func (p *proc) isExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// status reports how the process ended; call after exited is closed.
func (p *proc) status() exitStatus {
	st := exitStatus{stderr: p.errs.lines()}
	ps := p.cmd.ProcessState
	if ps == nil {
		st.code = -1
		return st
	}
	st.code = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.signal = procgroup.SignalName(ws.Signal())
	}
	return st
}

// serve reads the CLI's output through h until it ends and sends the last
// event; it closes out. Cancelling ctx stops the CLI (SIGTERM to its
// group, SIGKILL after the grace period) and ends the stream with ctx's
// error once the CLI has exited.
func (p *proc) serve(ctx context.Context, out chan<- provider.Event, h handler) {
	defer close(out)
	go func() {
		select {
		case <-ctx.Done():
			p.terminate()
		case <-p.exited:
		}
	}()
	var fatal error
	for {
		raw, err := p.out.ReadBytes('\n')
		if line := bytes.TrimSpace(raw); fatal == nil && len(line) > 0 && line[0] == '{' {
			if !json.Valid(line) {
				fatal = fmt.Errorf("%w: %s printed a line that is not JSON: %.200q", provider.ErrProtocol, p.name, line)
			} else {
				fatal = h.line(line)
			}
			if fatal != nil {
				p.terminate()
			}
		}
		if err != nil {
			break
		}
	}
	<-p.exited
	if r, ok := h.(releaser); ok {
		r.release()
	}
	var last provider.Event
	switch {
	case ctx.Err() != nil:
		last = provider.Event{Kind: provider.ErrorEvent, Err: ctx.Err()}
	case fatal != nil:
		last = provider.Event{Kind: provider.ErrorEvent, Err: fatal}
	default:
		last = h.finish(p.status())
	}
	// The last event is always delivered: the contract is that a reader
	// drains the channel until it closes.
	out <- last
}

// launch starts the CLI and serves its output through the handler made
// for it. Errors come before anything is sent.
func launch(ctx context.Context, cfg Config, name, bin string, args []string, dir string, mark procmark.Mark, input []byte, mk func(p *proc, e emitter) handler) (<-chan provider.Event, error) {
	return launchWith(ctx, cfg, name, bin, args, dir, mark, input, false, mk)
}

// launchWith is launch, with stdin kept open when keep is set.
func launchWith(ctx context.Context, cfg Config, name, bin string, args []string, dir string, mark procmark.Mark, input []byte, keep bool, mk func(p *proc, e emitter) handler) (<-chan provider.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("run %s: folder %s does not exist", name, dir)
		}
	}
	p, err := start(cfg, name, bin, args, dir, mark, input, keep)
	if err != nil {
		return nil, err
	}
	out := make(chan provider.Event, 16)
	h := mk(p, emitter{ctx: ctx, out: out})
	go p.serve(ctx, out, h)
	return out, nil
}
