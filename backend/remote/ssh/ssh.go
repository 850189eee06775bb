// Package ssh reaches other computers through the system's OpenSSH client,
// so ~/.ssh/config aliases, ProxyJump, IdentityFile, the agent and
// known_hosts work as in a terminal. Every call is non-interactive
// (BatchMode), shares one multiplexed connection per host (ControlMaster),
// checks host keys strictly against Conch's own known_hosts and the
// person's (read only), and runs its script under a plain /bin/sh, whatever
// the login shell's rc files print or exec.
package ssh

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Config says how a Client runs ssh.
type Config struct {
	// ConfigFile is passed with -F when set; empty lets OpenSSH read the
	// person's own ~/.ssh/config.
	ConfigFile string
	// ConfigFileOf, when set, is asked for ConfigFile at every call (the
	// person's preference, which may change while Conch runs).
	ConfigFileOf func() string
	// KnownHosts is Conch's own known_hosts file, where accepted keys go.
	KnownHosts string
	// ControlDir holds the multiplexed connections' sockets; made with
	// mode 0700. Keep it short: a socket's path has a limit near 100
	// bytes, and ssh adds 58 to it.
	ControlDir string
	// ConnectTimeout bounds making a connection (0: 10 s).
	ConnectTimeout time.Duration
	// Persist is how long an idle connection stays open (0: 10 min).
	Persist time.Duration
	// Binary is the ssh client ("": ssh on PATH).
	Binary string
}

// Client runs commands on hosts over ssh.
type Client struct {
	cfg Config
}

// New returns a Client; it makes cfg.ControlDir (0700) if missing.
func New(cfg Config) (*Client, error) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.Persist == 0 {
		cfg.Persist = 10 * time.Minute
	}
	if cfg.Binary == "" {
		cfg.Binary = "ssh"
	}
	if cfg.KnownHosts == "" || cfg.ControlDir == "" {
		return nil, errors.New("ssh: a known_hosts file and a control folder are needed")
	}
	if err := os.MkdirAll(cfg.ControlDir, 0o700); err != nil {
		return nil, fmt.Errorf("ssh: make %s: %w", cfg.ControlDir, err)
	}
	if err := os.Chmod(cfg.ControlDir, 0o700); err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	return &Client{cfg: cfg}, nil
}

// Config is what the client was made with.
func (c *Client) Config() Config { return c.cfg }

// configFile is the -F file now ("": none).
func (c *Client) configFile() string {
	if c.cfg.ConfigFileOf != nil {
		return c.cfg.ConfigFileOf()
	}
	return c.cfg.ConfigFile
}

// base are the options of every call but the known hosts, which
// Resolve reads.
func (c *Client) base() []string {
	var a []string
	if f := c.configFile(); f != "" {
		a = append(a, "-F", f)
	}
	return append(a, "-T", "-x", "-a",
		"-o", "BatchMode=yes",
		"-o", "ConnectTimeout="+strconv.Itoa(int(c.cfg.ConnectTimeout/time.Second)),
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UpdateHostKeys=no",
		"-o", "ControlMaster=auto",
		"-o", "ControlPath="+c.cfg.ControlDir+"/%C",
		"-o", "ControlPersist="+strconv.Itoa(int(c.cfg.Persist/time.Second)),
		// A forwarded socket left by a connection that died is replaced.
		"-o", "StreamLocalBindUnlink=yes",
	)
}

// Resolved is a target as ssh's config reads it (ssh -G).
type Resolved struct {
	HostName string
	Port     int
	User     string
	// HostKeyAlias is the name host keys are checked under, when the
	// config sets one.
	HostKeyAlias string
	// KnownHosts are the person's known_hosts files, read only.
	KnownHosts []string
	// ProxyJump is set when the connection goes through another host.
	ProxyJump string
}

// KeyName is the name the host's key is kept under in known_hosts.
func (r Resolved) KeyName() string {
	h := r.HostName
	if r.HostKeyAlias != "" {
		h = r.HostKeyAlias
	}
	if r.Port != 22 && r.HostKeyAlias == "" {
		return "[" + h + "]:" + strconv.Itoa(r.Port)
	}
	return h
}

// Resolve asks ssh what it would connect to for t.
func (c *Client) Resolve(ctx context.Context, t Target) (Resolved, error) {
	args := []string{"-G"}
	if f := c.configFile(); f != "" {
		args = append(args, "-F", f)
	}
	out, err := exec.CommandContext(ctx, c.cfg.Binary, append(args, t.args()...)...).Output()
	if err != nil {
		return Resolved{}, fmt.Errorf("read the ssh config for %s: %w%s", t, err, stderrOf(err))
	}
	var r Resolved
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "hostname":
			r.HostName = v
		case "port":
			r.Port, _ = strconv.Atoi(v)
		case "user":
			r.User = v
		case "hostkeyalias":
			r.HostKeyAlias = v
		case "userknownhostsfile":
			r.KnownHosts = strings.Fields(v)
		case "proxyjump":
			if v != "none" {
				r.ProxyJump = v
			}
		}
	}
	return r, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// Result is what a script printed on the host, and how it ended.
type Result struct {
	Stdout []byte
	Stderr []byte
	// ExitCode is the script's exit status.
	ExitCode int
}

// Run runs script with /bin/sh on the host, as the target's user, and
// returns what it printed. The login shell still starts (sshd runs every
// command through it), so its rc files may print text or exec another
// shell: the script goes in on stdin, which whatever shell ends up reading
// runs, and its output is read from after a marker it prints first. A
// connection or host key failure is an *Error.
func (c *Client) Run(ctx context.Context, t Target, script string) (Result, error) {
	return c.run(ctx, t, script, nil)
}

// RunInput is Run with input following the script on its stdin: the
// script reads it (head -c N > file), from its first byte.
func (c *Client) RunInput(ctx context.Context, t Target, script string, input io.Reader) (Result, error) {
	return c.run(ctx, t, script, input)
}

// readLine is the command the login shell is given: a plain sh that
// reads exactly one line (read takes no byte past the newline, where sh
// reading a script from a pipe would take a buffer's worth) and runs it.
// A login shell whose rc file execs another shell never runs it: that
// shell reads the same line from stdin instead (zsh and bash read a pipe
// a line at a time), and runs it the same.
const readLine = `exec /bin/sh -c 'IFS= read -r l && eval "$l"'`

func (c *Client) run(ctx context.Context, t Target, script string, input io.Reader) (Result, error) {
	r, err := c.Resolve(ctx, t)
	if err != nil {
		return Result{}, err
	}
	mark := "conch-" + token()
	body := "printf '%s\\n' " + mark + "\n" + script
	// One line, in the syntax every Bourne-like shell and zsh share, that
	// reads the script's exact bytes after it (dd takes no more) and runs
	// them with a plain sh; the input follows.
	line := fmt.Sprintf("exec /bin/sh -c \"$(dd bs=1 count=%d 2>/dev/null)\"\n", len(body)) + body
	args := append(c.base(), "-o", "UserKnownHostsFile="+c.knownHosts(r))
	args = append(args, t.args()...)
	args = append(args, readLine)
	cmd := exec.CommandContext(ctx, c.cfg.Binary, args...)
	var stdin io.Reader = strings.NewReader(line)
	if input != nil {
		stdin = io.MultiReader(stdin, input)
	}
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A connection master left in the background must not hold Run.
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	res := Result{Stderr: stderr.Bytes()}
	out := stdout.Bytes()
	i := bytes.Index(out, []byte(mark+"\n"))
	if i >= 0 {
		res.Stdout = out[i+len(mark)+1:]
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return res, fmt.Errorf("ssh %s: %w", t, ctx.Err())
	case errors.As(err, &ee) && i >= 0 && ee.ExitCode() != 255:
		res.ExitCode = ee.ExitCode()
	case errors.As(err, &ee):
		return res, classify(t, r, stderr.String())
	default:
		return res, fmt.Errorf("ssh %s: %w", t, err)
	}
	if i < 0 {
		return res, &Error{Kind: Failed, Target: t, Detail: "the host's shell never ran Conch's command (" + FirstLine(stderr.String()) + ")"}
	}
	return res, nil
}

// Forward makes local a Unix socket that reaches remote, a Unix socket on
// the host, over the host's shared connection (which a Run opens). A
// stale socket at local is replaced. The forward lasts as long as the
// connection does.
func (c *Client) Forward(ctx context.Context, t Target, local, remote string) error {
	args := append(c.base(), "-O", "forward", "-L", local+":"+remote)
	out, err := exec.CommandContext(ctx, c.cfg.Binary, append(args, t.args()...)...).CombinedOutput()
	if err != nil {
		return &Error{Kind: Failed, Target: t, Detail: "could not forward Conch's socket there (" + FirstLine(string(out)) + ")"}
	}
	return nil
}

// knownHosts is Conch's file first, then the person's, quoted for -o.
func (c *Client) knownHosts(r Resolved) string {
	files := append([]string{c.cfg.KnownHosts}, r.KnownHosts...)
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = `"` + f + `"`
	}
	return strings.Join(q, " ")
}

// Close ends the host's shared connection, if one is open.
func (c *Client) Close(ctx context.Context, t Target) {
	args := append(c.base(), "-O", "exit")
	_ = exec.CommandContext(ctx, c.cfg.Binary, append(args, t.args()...)...).Run()
}

func token() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FirstLine is the first line of what a command said, trimmed, or a
// sentence saying it said nothing.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "it said nothing"
	}
	return s
}

// GitCommand is the ssh command line git uses to reach t (its
// GIT_SSH_COMMAND, a shell string): Conch's own options, known hosts
// and shared connection, never a prompt.
func (c *Client) GitCommand(ctx context.Context, t Target) (string, error) {
	r, err := c.Resolve(ctx, t)
	if err != nil {
		return "", err
	}
	args := append([]string{c.cfg.Binary}, c.base()...)
	args = append(args, "-o", "UserKnownHostsFile="+c.knownHosts(r))
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " "), nil
}
