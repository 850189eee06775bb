package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/internal/wire"
)

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
	return apiError{Message: wire.Shorten(string(body), 300)}
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
	name, says, code := p.cfg.Name, wire.Says(status, ae.Message), wire.Code(status)
	switch {
	case status == 529 || ae.Type == "overloaded_error":
		return wire.Errorf(provider.ErrOverload, "%s is overloaded%s; try again in a moment.", name, code)
	case status == http.StatusUnauthorized || ae.Type == "authentication_error":
		return wire.Errorf(provider.ErrAuth, "%s refused the API key%s: %s", name, code, says)
	case status == http.StatusForbidden || ae.Type == "permission_error":
		return wire.Errorf(provider.ErrAuth, "%s does not allow this key to do that%s: %s", name, code, says)
	case status == http.StatusPaymentRequired || ae.Type == "billing_error":
		return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
	case status == http.StatusTooManyRequests || ae.Type == "rate_limit_error":
		if ae.isSpend() {
			return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
		}
		return wire.Limited(name, code, says, ae.Message, resetTime(h, time.Now()))
	case status == http.StatusNotFound || ae.Type == "not_found_error":
		return wire.Errorf(provider.ErrNotReady, "%s cannot find that%s: %s", name, code, says)
	case status >= 500 || ae.Type == "api_error":
		return wire.Errorf(provider.ErrOverload, "%s had a problem%s: %s Try again in a moment.", name, code, says)
	}
	return wire.Rejected(name, code, says, status)
}

// resetTime is when a limit lifts, the latest the headers say: retry-after
// (seconds) and anthropic-ratelimit-*-reset (RFC 3339). Zero when none is
// given.
func resetTime(h http.Header, now time.Time) time.Time {
	until := wire.RetryAfter(h, now)
	for k, vs := range h {
		k = strings.ToLower(k)
		if !strings.HasPrefix(k, "anthropic-ratelimit-") || !strings.HasSuffix(k, "-reset") || len(vs) == 0 {
			continue
		}
		// A reset for a limit with room left says nothing about this one.
		if rem := h.Get(strings.TrimSuffix(k, "-reset") + "-remaining"); rem != "" && rem != "0" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(vs[0])); err == nil && t.After(until) {
			until = t
		}
	}
	return until
}
