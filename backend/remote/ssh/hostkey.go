package ssh

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Kind says why ssh did not connect.
type Kind string

const (
	// UnknownKey: the host's key is in no known_hosts file; the person
	// must check its fingerprint and accept it.
	UnknownKey Kind = "unknown-key"
	// ChangedKey: the host shows a key other than the one accepted.
	ChangedKey Kind = "key-changed"
	// NoKey: the host took no key of this user (it wants a password).
	NoKey Kind = "no-key"
	// Unreachable: no connection could be made.
	Unreachable Kind = "unreachable"
	// Failed: anything else ssh refused.
	Failed Kind = "failed"
)

// Error is a connection ssh did not make, with a sentence a person can
// act on.
type Error struct {
	Kind   Kind
	Target Target
	// KeyType is the unknown key's type ("ED25519"), for Scan.
	KeyType string
	// File is where a changed key's old line is.
	File string
	// Detail is ssh's own words.
	Detail string
}

func (e *Error) Error() string {
	switch e.Kind {
	case UnknownKey:
		return fmt.Sprintf("the host key of %s is not known yet: check its fingerprint and accept it to connect", e.Target)
	case ChangedKey:
		where := "its old line from your known_hosts"
		if e.File != "" {
			where = "its old line from " + e.File
		}
		return fmt.Sprintf("the host key of %s changed since it was accepted, so Conch will not connect: someone may be "+
			"intercepting the connection, or the host was reinstalled; if you know why it changed, remove %s and test again", e.Target, where)
	case NoKey:
		return fmt.Sprintf("%s did not accept a key (%s); Conch signs in only with a key, never a password: "+
			"set one up (ssh-copy-id %s) and test again", e.Target, e.Detail, e.Target)
	case Unreachable:
		return fmt.Sprintf("could not reach %s: %s", e.Target, e.Detail)
	}
	return fmt.Sprintf("ssh to %s failed: %s", e.Target, e.Detail)
}

var (
	unknownKey = regexp.MustCompile(`No (\S+) host key is known for`)
	offending  = regexp.MustCompile(`Offending \S+ key in (.+):\d+`)
	denied     = regexp.MustCompile(`Permission denied \(([^)]*)\)`)
)

// classify reads ssh's complaint (exit 255).
func classify(t Target, r Resolved, stderr string) *Error {
	e := &Error{Target: t, Detail: FirstLine(stderr)}
	switch {
	case unknownKey.MatchString(stderr):
		e.Kind, e.KeyType = UnknownKey, unknownKey.FindStringSubmatch(stderr)[1]
	case strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED") || strings.Contains(stderr, "has changed and you have requested strict checking"):
		e.Kind = ChangedKey
		if m := offending.FindStringSubmatch(stderr); m != nil {
			e.File = m[1]
		}
	case denied.MatchString(stderr):
		e.Kind = NoKey
		e.Detail = "it offers " + denied.FindStringSubmatch(stderr)[1]
	case strings.Contains(stderr, "Connection refused"), strings.Contains(stderr, "timed out"),
		strings.Contains(stderr, "Could not resolve"), strings.Contains(stderr, "No route to host"),
		strings.Contains(stderr, "Network is unreachable"), strings.Contains(stderr, "Connection closed"),
		strings.Contains(stderr, "Connection reset"):
		e.Kind = Unreachable
	default:
		e.Kind = Failed
	}
	return e
}

// Key is a host key as it would be accepted: its known_hosts line and
// its SHA256 fingerprint.
type Key struct {
	Line        string
	Fingerprint string
}

// Scan fetches the host's key of keyType ("ED25519") with ssh-keyscan,
// named as ssh will look it up. It cannot through a ProxyJump.
func (c *Client) Scan(ctx context.Context, t Target, keyType string) (Key, error) {
	r, err := c.Resolve(ctx, t)
	if err != nil {
		return Key{}, err
	}
	if r.ProxyJump != "" {
		return Key{}, fmt.Errorf("the key of %s cannot be fetched through its ProxyJump; connect once with ssh in a terminal to accept it, then test again", t)
	}
	timeout := strconv.Itoa(max(1, int(c.cfg.ConnectTimeout.Seconds())))
	out, err := exec.CommandContext(ctx, "ssh-keyscan", "-T", timeout, "-t", strings.ToLower(keyType),
		"-p", strconv.Itoa(r.Port), "--", r.HostName).Output()
	if err != nil {
		return Key{}, fmt.Errorf("fetch the host key of %s: %w%s", t, err, stderrOf(err))
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || strings.HasPrefix(line, "#") {
			continue
		}
		k := Key{Line: r.KeyName() + " " + f[1] + " " + f[2]}
		fp, err := Fingerprint(ctx, k.Line)
		if err != nil {
			return Key{}, err
		}
		k.Fingerprint = fp
		return k, nil
	}
	return Key{}, fmt.Errorf("%s showed no %s host key to ssh-keyscan", t, keyType)
}

// Fingerprint is the SHA256 fingerprint of a known_hosts line.
func Fingerprint(ctx context.Context, line string) (string, error) {
	cmd := exec.CommandContext(ctx, "ssh-keygen", "-l", "-E", "sha256", "-f", "-")
	cmd.Stdin = strings.NewReader(line + "\n")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("fingerprint a host key: %w%s", err, stderrOf(err))
	}
	f := strings.Fields(string(out))
	if len(f) < 2 || !strings.HasPrefix(f[1], "SHA256:") {
		return "", fmt.Errorf("fingerprint a host key: ssh-keygen said %q", out)
	}
	return f[1], nil
}

// appending keeps two accepts from interleaving their lines.
var appending sync.Mutex

// Accept adds k's line to Conch's known_hosts (made 0600 if missing);
// a line already there is not written twice.
func (c *Client) Accept(k Key) error {
	if strings.ContainsAny(k.Line, "\r\n") || len(strings.Fields(k.Line)) != 3 {
		return fmt.Errorf("%w: not a known_hosts line", ErrInvalid)
	}
	appending.Lock()
	defer appending.Unlock()
	old, err := os.ReadFile(c.cfg.KnownHosts)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read %s: %w", c.cfg.KnownHosts, err)
	}
	for _, l := range bytes.Split(old, []byte("\n")) {
		if string(bytes.TrimSpace(l)) == k.Line {
			return nil
		}
	}
	f, err := os.OpenFile(c.cfg.KnownHosts, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("accept the host key: %w", err)
	}
	line := k.Line + "\n"
	if len(old) > 0 && old[len(old)-1] != '\n' {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("accept the host key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("accept the host key: %w", err)
	}
	return f.Close()
}
