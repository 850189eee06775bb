// Package agentcli runs coding-agent CLIs (Claude Code, Codex, Gemini CLI)
// as providers: one process per request, started in the request's folder,
// its whole tree (tools in sessions of their own too) marked and stopped
// as one (see proctree). What each CLI speaks is in docs/agents:
//
//   - Claude Code: `claude -p` with stream-json lines on stdout.
//   - Codex: `codex app-server`, JSON-RPC on stdio (see rpc.go).
//   - Gemini CLI: `gemini --acp`, the Agent Client Protocol: JSON-RPC on
//     stdio.
//
// Conch is each CLI's permission authority in every mode: every step the
// CLI would ask about comes to Request.Ask (Claude Code's through the MCP
// permission tool Conch serves it, the others' as JSON-RPC requests), and
// Conch's gate answers. Conch's own tools (Request.Tools) reach every CLI
// over the same loopback MCP server, run through Request.Call.
//
// Reading output lines: every line is one JSON object. An empty line, or a
// line that does not start with '{', is noise (a CLI's warning printed to
// stdout) and is skipped; a line that starts with '{' but is not valid
// JSON ends the stream with provider.ErrProtocol. Unknown types are
// ignored. Lines may be of any length.
//
// The transcript: the CLIs take one prompt, so a conversation of several
// turns is sent as one user message, the earlier turns first as context
// text (see prompt), the last user message after them. The system prompt,
// when there is one, leads that text (Codex takes it as developer
// instructions instead).
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
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"conch/backend/internal/procgroup"
	"conch/backend/internal/proctree"
	"conch/backend/procmark"
	"conch/backend/provider"
	"conch/backend/task"
)

// The CLIs are providers.
var (
	_ provider.Provider = (*Claude)(nil)
	_ provider.Provider = (*Codex)(nil)
	_ provider.Provider = (*Gemini)(nil)
)

// StopGrace is how long a stopped tree has between SIGTERM and SIGKILL:
// a stop ends everything within two seconds (SPEC §3 Processes).
const StopGrace = 1500 * time.Millisecond

// probeTimeout bounds a login probe such as `claude auth status`.
const probeTimeout = 3 * time.Second

// ErrNeedsAsk is returned by Stream for a mode that needs asking (ask,
// edits) on a CLI that cannot route its questions to Conch.
var ErrNeedsAsk = errors.New("this CLI cannot ask before a side effect, so it runs only in plan or auto mode")

// Config is one configured CLI provider.
type Config struct {
	// ID and Name identify the provider in Conch.
	ID   string
	Name string
	// Binary is the CLI's path, or a name looked up on PATH; empty uses
	// the CLI's usual name (claude, codex, gemini).
	Binary string
	// Env holds extra KEY=VALUE pairs added to Conch's environment.
	Env []string
	// Model is the default model; empty leaves the choice to the CLI.
	Model string
	// Grace overrides StopGrace (tests).
	Grace time.Duration
	// Oldest overrides the oldest version of the CLI Conch works with
	// (tests: a floor above the installed CLI).
	Oldest string
}

// lookPath finds the binary, honouring a PATH given in Env.
func (c Config) lookPath(name string) (string, error) {
	bin := c.Binary
	if bin == "" {
		bin = name
	}
	if strings.ContainsRune(bin, filepath.Separator) {
		if _, err := os.Stat(bin); err != nil {
			return "", err
		}
		return bin, nil
	}
	if path, ok := c.getenv("PATH"); ok {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				dir = "."
			}
			full := filepath.Join(dir, bin)
			if st, err := os.Stat(full); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return full, nil
			}
		}
		return "", exec.ErrNotFound
	}
	return exec.LookPath(bin)
}

// getenv reads a variable from Env, or else from Conch's environment.
func (c Config) getenv(key string) (string, bool) {
	for i := len(c.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.Env[i], "="); ok && k == key {
			return v, true
		}
	}
	return os.LookupEnv(key)
}

func (c Config) environ() []string { return append(os.Environ(), c.Env...) }

// with is c with env added to Env (a request's own variables).
func (c Config) with(env []string) Config {
	c.Env = append(append([]string(nil), c.Env...), env...)
	return c
}

func (c Config) grace() time.Duration {
	if c.Grace > 0 {
		return c.Grace
	}
	return StopGrace
}

// model picks the request's model, else the configured one.
func (c Config) model(req provider.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.Model
}

// notFound is the reason a missing binary gives.
func notFound(bin, product string) string {
	return fmt.Sprintf("%s was not found on PATH; install %s", bin, product)
}

// mode returns the request's mode, plan when none is set.
func mode(req provider.Request) task.Mode {
	if req.Mode == "" {
		return task.Plan
	}
	return req.Mode
}

// probe runs a cheap status command with a timeout. ok is false when it
// could not tell (it did not start or ran out of time).
func probe(ctx context.Context, cfg Config, bin string, args ...string) (code int, out string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cfg.environ()
	cmd.SysProcAttr = procgroup.Attr()
	cmd.Cancel = func() error {
		procgroup.Signal(cmd.Process.Pid, syscall.SIGKILL)
		return nil
	}
	cmd.WaitDelay = time.Second
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		return 0, "", false
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, "", false
	}
	return cmd.ProcessState.ExitCode(), strings.TrimSpace(buf.String()), true
}

// firstLine returns s's first non-empty line without terminal escape
// codes (a CLI colours its notices), or fallback.
func firstLine(s, fallback string) string {
	for _, line := range strings.Split(plain(s), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return fallback
}

// ansi matches terminal escape sequences: CSI (colours, cursor moves) and
// OSC (titles, links).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// plain is s without terminal escape codes and carriage returns.
func plain(s string) string {
	return strings.ReplaceAll(ansi.ReplaceAllString(s, ""), "\r", "")
}

// prompt turns the conversation into the one text the CLI is given: the
// system prompt, the earlier turns labelled by speaker, then the last user
// message. A single user message with no system prompt is sent as is.
func prompt(req provider.Request) string {
	msgs := req.Messages
	last := ""
	if n := len(msgs); n > 0 && msgs[n-1].Role == provider.User {
		last = msgs[n-1].Text
		msgs = msgs[:n-1]
	}
	if len(msgs) == 0 && req.System == "" {
		return last
	}
	var b strings.Builder
	if req.System != "" {
		b.WriteString(strings.TrimSpace(req.System))
		b.WriteString("\n\n")
	}
	if len(msgs) > 0 {
		b.WriteString("Earlier in this conversation:\n\n")
		for _, m := range msgs {
			switch m.Role {
			case provider.User:
				b.WriteString("User: " + m.Text + "\n\n")
			case provider.Assistant:
				if m.Text != "" {
					b.WriteString("Assistant: " + m.Text + "\n\n")
				}
				for _, c := range m.ToolCalls {
					fmt.Fprintf(&b, "Assistant used %s: %s\n\n", c.Name, c.Arguments)
				}
			case provider.ToolRole:
				label := "Tool result"
				if m.IsError {
					label = "Tool error"
				}
				b.WriteString(label + ": " + m.Text + "\n\n")
			}
		}
		if last != "" {
			b.WriteString("The user now says:\n\n")
		}
	}
	b.WriteString(last)
	return strings.TrimRight(b.String(), "\n")
}

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

// emitter sends events that are not the last; once ctx is done they are
// dropped, since nobody need be reading.
type emitter struct {
	ctx context.Context
	out chan<- provider.Event
}

func (e emitter) emit(ev provider.Event) {
	select {
	case e.out <- ev:
	case <-e.ctx.Done():
	}
}

func (e emitter) text(s string) {
	if s != "" {
		e.emit(provider.Event{Kind: provider.TextDelta, Text: s})
	}
}

func (e emitter) step(s string) {
	if s != "" {
		e.emit(provider.Event{Kind: provider.StepEvent, Text: s})
	}
}

func (e emitter) notice(s string) {
	if s != "" {
		e.emit(provider.Event{Kind: provider.NoticeEvent, Text: s})
	}
}

func (e emitter) usage(u provider.Usage) {
	e.emit(provider.Event{Kind: provider.UsageEvent, Usage: &u})
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

// tail keeps the last bytes a CLI wrote on stderr, and hands each whole
// line to onLine when one is set (Gemini CLI says there that it retries).
type tail struct {
	mu      sync.Mutex
	buf     []byte
	onLine  func(string)
	partial []byte // the line being written, for onLine
}

const tailBytes = 4096

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	var lines []string
	if t.onLine != nil {
		t.partial = append(t.partial, b...)
		for {
			i := bytes.IndexByte(t.partial, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, plain(string(t.partial[:i])))
			t.partial = t.partial[i+1:]
		}
		if len(t.partial) > tailBytes { // a line that never ends is cut
			lines = append(lines, plain(string(t.partial)))
			t.partial = nil
		}
	}
	onLine := t.onLine
	t.mu.Unlock()
	for _, l := range lines {
		onLine(l)
	}
	return len(b), nil
}

// lineHook sets onLine.
func (t *tail) lineHook(fn func(string)) {
	t.mu.Lock()
	t.onLine = fn
	t.mu.Unlock()
}

// lines returns the last few non-empty lines, joined with " | ".
func (t *tail) lines() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > 5 {
		keep = keep[len(keep)-5:]
	}
	out := strings.Join(keep, " | ")
	if r := []rune(out); len(r) > 600 {
		out = "…" + string(r[len(r)-600:])
	}
	return out
}

// shorten makes a command or a path fit on one line of a step.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// relPath shows path relative to dir when it lies inside it.
func relPath(dir, path string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	if rel, err := filepath.Rel(dir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}

// tilde shows dir with the home folder as ~.
func tilde(dir string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || dir == "" {
		return dir
	}
	if dir == home {
		return "~"
	}
	if rel, err := filepath.Rel(home, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return "~/" + filepath.ToSlash(rel)
	}
	return dir
}

// str reads a string field of a JSON object, "" when absent.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
