package openai

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

// apiError is the error object of an OpenAI-compatible server:
// {"error":{"message","type","param","code"}}, where OpenRouter's code is the
// HTTP status as a number and some servers send {"error":"text"}.
type apiError struct {
	Message string
	Type    string
	Code    string
	Status  int // a numeric code (OpenRouter)
}

// parseAPIError reads an error body or the value of a chunk's "error" field.
func parseAPIError(body []byte) apiError {
	body = bytes.TrimSpace(body)
	var outer struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &outer) == nil {
		if len(outer.Error) > 0 && string(outer.Error) != "null" {
			return parseErrorValue(outer.Error)
		}
		if outer.Message != "" {
			return apiError{Message: outer.Message}
		}
	}
	return apiError{Message: shorten(string(body), 300)}
}

func parseErrorValue(raw json.RawMessage) apiError {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return apiError{Message: text}
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return apiError{Message: shorten(string(raw), 300)}
	}
	ae := apiError{Message: obj.Message, Type: obj.Type}
	if json.Unmarshal(obj.Code, &ae.Code) != nil {
		var n float64
		if json.Unmarshal(obj.Code, &n) == nil {
			ae.Status = int(n)
		}
	}
	return ae
}

// isQuota reports whether a 429 means "out of quota" (do not retry) rather
// than "too fast" (retry shortly).
func (ae apiError) isQuota() bool {
	if ae.Code == "rate_limit_exceeded" {
		return false
	}
	switch ae.Type {
	case "insufficient_quota", "billing_error":
		return true
	}
	switch ae.Code {
	case "insufficient_quota", "credit_balance_exhausted", "billing_hard_limit_reached", "billing_not_active":
		return true
	}
	m := strings.ToLower(ae.Message)
	for _, w := range []string{"quota", "credit", "billing", "spend limit", "spending limit"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// classify turns an error status and the server's error object into an error
// that wraps the right sentinel and reads as one sentence.
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
	switch {
	case status == http.StatusForbidden:
		// OpenRouter also answers 403 when moderation flags the input.
		return errorf(provider.ErrAuth, "%s does not allow this (403): %s", name, says)
	case status == http.StatusUnauthorized || ae.Type == "authentication_error" || ae.Code == "invalid_api_key":
		if status == 0 {
			return errorf(provider.ErrAuth, "%s refused the API key: %s", name, says)
		}
		return errorf(provider.ErrAuth, "%s refused the API key (%d): %s", name, status, says)
	case status == http.StatusPaymentRequired:
		return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
	case status == http.StatusTooManyRequests || ae.Code == "rate_limit_exceeded" || ae.Type == "insufficient_quota" || ae.Type == "rate_limit_error":
		if ae.isQuota() {
			return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
		}
		if until := resetTime(h, time.Now()); !until.IsZero() && !strings.Contains(strings.ToLower(msg), "try again") {
			return errorf(provider.ErrOverload, "%s is limiting how fast it is asked (429): %s Try again in %s.",
				name, says, waitText(time.Until(until)))
		}
		return errorf(provider.ErrOverload, "%s is limiting how fast it is asked (429): %s", name, says)
	case status == http.StatusNotFound || ae.Type == "not_found_error" || ae.Code == "model_not_found":
		return errorf(provider.ErrNotReady, "%s cannot serve that model: %s", name, says)
	case status >= 500 || ae.Type == "server_error" || ae.Code == "server_error":
		if status > 0 {
			return errorf(provider.ErrOverload, "%s had a problem (%d): %s Try again in a moment.", name, status, says)
		}
		return errorf(provider.ErrOverload, "%s had a problem: %s Try again in a moment.", name, says)
	}
	if status > 0 {
		return fmt.Errorf("%s rejected the request (%d): %s", name, status, says)
	}
	return fmt.Errorf("%s says: %s", name, says)
}

// netError explains a request that got no answer.
func (p *Provider) netError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return p.stopped(ctx)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return errorf(provider.ErrNotReady, "Nothing answers at %s: is %s running?", p.cfg.BaseURL, p.cfg.Name)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return errorf(provider.ErrNotReady, "Could not find %s (%s): is the address right and the network up?", p.cfg.BaseURL, dns.Err)
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

// resetTime is when a limit lifts, the latest the headers say: Retry-After
// (seconds or an HTTP date), OpenAI's x-ratelimit-reset-{requests,tokens}
// (durations such as "6m0s") and OpenRouter's x-ratelimit-reset (Unix
// milliseconds). Zero when none is given.
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
	for _, k := range []string{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens"} {
		if d, err := time.ParseDuration(strings.TrimSpace(h.Get(k))); err == nil && d > 0 {
			later(now.Add(d))
		}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64); err == nil && n > 1e12 {
		later(time.UnixMilli(n))
	}
	return until
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

// waitText says how long to wait in a person's terms ("2s", "6m0s").
func waitText(d time.Duration) string {
	if d < time.Second {
		return "a moment"
	}
	// Round up: a wait read a moment after the header was written is a
	// hair short of it.
	return ((d + time.Second - 1) / time.Second * time.Second).String()
}
