package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"conch/backend/provider"
)

// wireError is a sentence for a person that still answers errors.Is for
// one of provider's sentinel errors.
type wireError struct {
	msg  string
	kind error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &wireError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// apiError is the error object of the Messages API:
// {"type":"error","error":{"type","message"},"request_id"}.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// parseAPIError reads an error body or an error event's data.
func parseAPIError(body []byte) apiError {
	var outer struct {
		Error json.RawMessage `json:"error"`
	}
	body = bytes.TrimSpace(body)
	if json.Unmarshal(body, &outer) == nil && len(outer.Error) > 0 {
		var ae apiError
		if json.Unmarshal(outer.Error, &ae) == nil {
			return ae
		}
		var text string
		if json.Unmarshal(outer.Error, &text) == nil {
			return apiError{Message: text}
		}
	}
	return apiError{Message: shorten(string(body), 300)}
}

// isSpend reports whether a rate-limit error is a spend or credit limit,
// which waiting a moment does not lift.
func (ae apiError) isSpend() bool {
	if ae.Type == "billing_error" {
		return true
	}
	m := strings.ToLower(ae.Message)
	for _, w := range []string{"spend", "credit", "quota", "billing"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// classify turns an HTTP status (0 for an error event in the stream) and
// the error object into an error that wraps the right sentinel and reads as
// one sentence.
func (p *Provider) classify(status int, h http.Header, ae apiError) error {
	name := p.cfg.Name
	msg := ae.Message
	if msg == "" {
		if status > 0 {
			msg = http.StatusText(status)
		} else {
			msg = "no reason given"
		}
	}
	says := sentence(msg)
	code := ""
	if status > 0 {
		code = fmt.Sprintf(" (%d)", status)
	}
	switch {
	case status == 529 || ae.Type == "overloaded_error":
		return errorf(provider.ErrOverload, "%s is overloaded%s; try again in a moment.", name, code)
	case status == http.StatusUnauthorized || ae.Type == "authentication_error":
		return errorf(provider.ErrAuth, "%s refused the API key%s: %s", name, code, says)
	case status == http.StatusForbidden || ae.Type == "permission_error":
		return errorf(provider.ErrAuth, "%s does not allow this key to do that%s: %s", name, code, says)
	case status == http.StatusPaymentRequired || ae.Type == "billing_error":
		return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
	case status == http.StatusTooManyRequests || ae.Type == "rate_limit_error":
		until := resetTime(h, time.Now())
		if ae.isSpend() {
			return &provider.LimitError{Until: until, Message: name + " says: " + says}
		}
		if !until.IsZero() && !strings.Contains(strings.ToLower(msg), "try again") {
			return errorf(provider.ErrOverload, "%s is limiting how fast it is asked%s: %s Try again in %s.", name, code, says, waitText(time.Until(until)))
		}
		return errorf(provider.ErrOverload, "%s is limiting how fast it is asked%s: %s", name, code, says)
	case status == http.StatusNotFound || ae.Type == "not_found_error":
		return errorf(provider.ErrNotReady, "%s cannot find that%s: %s", name, code, says)
	case status >= 500 || ae.Type == "api_error":
		return errorf(provider.ErrOverload, "%s had a problem%s: %s Try again in a moment.", name, code, says)
	}
	if status > 0 {
		return fmt.Errorf("%s rejected the request%s: %s", name, code, says)
	}
	return fmt.Errorf("%s says: %s", name, says)
}

// netError explains a request that got no answer.
func (p *Provider) netError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return p.stopped(ctx)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return errorf(provider.ErrNotReady, "Nothing answers at %s: is the address right?", p.cfg.BaseURL)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return errorf(provider.ErrNotReady, "Could not find %s (%s): is the network up?", p.cfg.BaseURL, dns.Err)
	}
	return errorf(provider.ErrNotReady, "Could not reach %s at %s: %v.", p.cfg.Name, p.cfg.BaseURL, unwrapURL(err))
}

// stopped is the error of a stream whose ctx ended.
func (p *Provider) stopped(ctx context.Context) error {
	return fmt.Errorf("stopped the request to %s: %w", p.cfg.Name, context.Cause(ctx))
}

func unwrapURL(err error) error {
	if u, ok := err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return err
}

// resetTime is when a limit lifts, the latest the headers say: retry-after
// (seconds) and anthropic-ratelimit-*-reset (RFC 3339). Zero when none is
// given.
func resetTime(h http.Header, now time.Time) time.Time {
	var until time.Time
	later := func(t time.Time) {
		if t.After(until) {
			until = t
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			later(now.Add(time.Duration(s * float64(time.Second))))
		} else if t, err := http.ParseTime(v); err == nil {
			later(t)
		}
	}
	for k, vs := range h {
		k = strings.ToLower(k)
		if !strings.HasPrefix(k, "anthropic-ratelimit-") || !strings.HasSuffix(k, "-reset") || len(vs) == 0 {
			continue
		}
		// A reset for a limit with room left says nothing about this one.
		if rem := h.Get(strings.TrimSuffix(k, "-reset") + "-remaining"); rem != "" && rem != "0" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(vs[0])); err == nil {
			later(t)
		}
	}
	return until
}

// waitText says how long to wait in a person's terms ("2s", "6m0s").
func waitText(d time.Duration) string {
	if d < time.Second {
		return "a moment"
	}
	// Round up: a wait read a moment after the header was written is a
	// hair short of it.
	return ((d + time.Second - 1) / time.Second * time.Second).String()
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	switch s[len(s)-1] {
	case '.', '!', '?', ')':
		return s
	}
	if strings.HasSuffix(s, "…") {
		return s
	}
	return s + "."
}

// shorten keeps s to about n bytes for an error message.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
