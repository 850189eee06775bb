package ssh

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"conch/backend/errcode"
)

// ErrInvalid is returned for a target ssh could never reach as written.
var ErrInvalid = errcode.ErrInvalid

// Target is where a host is: an alias of the ssh config ("devbox") or
// user@host:port, the user and port optional.
type Target struct {
	Host string
	User string
	// Port is 0 when the target names none (ssh's config or 22 decide).
	Port int
}

var (
	userName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)
	hostName = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$`)
)

// ParseTarget reads "devbox", "user@devbox", "devbox:2222" or
// "user@[::1]:2222", refusing anything ssh would read as an option or
// that holds spaces, quotes or control characters.
func ParseTarget(s string) (Target, error) {
	bad := func(why string) (Target, error) {
		return Target{}, fmt.Errorf("%w: target %q %s; write an ssh config alias (devbox) or user@host:port", ErrInvalid, s, why)
	}
	if s == "" {
		return Target{}, fmt.Errorf("%w: a host needs a target: an ssh config alias (devbox) or user@host:port", ErrInvalid)
	}
	if len(s) > 300 {
		return bad("is too long")
	}
	var t Target
	rest := s
	if u, h, ok := strings.Cut(s, "@"); ok {
		if !userName.MatchString(u) {
			return bad("has a user name ssh would not take")
		}
		t.User, rest = u, h
	}
	host, port := rest, ""
	switch {
	case strings.HasPrefix(rest, "["):
		end := strings.Index(rest, "]")
		if end < 0 {
			return bad("opens a [ it never closes")
		}
		host = rest[1:end]
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil {
			return bad("has brackets around something that is not an IPv6 address")
		}
		after := rest[end+1:]
		if after != "" {
			if !strings.HasPrefix(after, ":") {
				return bad("has text after its address")
			}
			port = after[1:]
		}
	case strings.Count(rest, ":") == 1:
		host, port, _ = strings.Cut(rest, ":")
		if !hostName.MatchString(host) {
			return bad("has a host name ssh would not take")
		}
	case strings.Contains(rest, ":"):
		return bad("looks like an IPv6 address; put it in brackets ([::1]:22)")
	default:
		if !hostName.MatchString(host) {
			return bad("has a host name ssh would not take")
		}
	}
	t.Host = host
	if port != "" || strings.HasSuffix(rest, ":") {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return bad("has a port that is not a number from 1 to 65535")
		}
		t.Port = p
	}
	return t, nil
}

// String is the target as written back: "user@host:port".
func (t Target) String() string {
	s := t.Host
	if strings.Contains(s, ":") {
		s = "[" + s + "]"
	}
	if t.User != "" {
		s = t.User + "@" + s
	}
	if t.Port != 0 {
		s += ":" + strconv.Itoa(t.Port)
	}
	return s
}

// args are the target as ssh's last arguments: its options, then the
// destination after "--".
func (t Target) args() []string {
	var a []string
	if t.Port != 0 {
		a = append(a, "-p", strconv.Itoa(t.Port))
	}
	if t.User != "" {
		a = append(a, "-l", t.User)
	}
	return append(a, "--", t.Host)
}

// URL is the ssh URL of the absolute path on t, as git takes it
// (ssh://[user@]host[:port]/path).
func (t Target) URL(path string) string {
	u := "ssh://"
	if t.User != "" {
		u += t.User + "@"
	}
	u += t.Host
	if t.Port != 0 {
		u += ":" + strconv.Itoa(t.Port)
	}
	return u + "/" + strings.TrimPrefix(path, "/")
}
