package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/internal/wire"
)

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
	return apiError{Message: wire.Shorten(string(body), 300)}
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
		return apiError{Message: wire.Shorten(string(raw), 300)}
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
	name, says, code := p.cfg.Name, wire.Says(status, ae.Message), wire.Code(status)
	switch {
	case status == http.StatusForbidden:
		// OpenRouter also answers 403 when moderation flags the input.
		return wire.Errorf(provider.ErrAuth, "%s does not allow this (403): %s", name, says)
	case status == http.StatusUnauthorized || ae.Type == "authentication_error" || ae.Code == "invalid_api_key":
		return wire.Errorf(provider.ErrAuth, "%s refused the API key%s: %s", name, code, says)
	case status == http.StatusPaymentRequired:
		return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
	case status == http.StatusTooManyRequests || ae.Code == "rate_limit_exceeded" || ae.Type == "insufficient_quota" || ae.Type == "rate_limit_error":
		if ae.isQuota() {
			return &provider.LimitError{Until: resetTime(h, time.Now()), Message: name + " says: " + says}
		}
		return wire.Limited(name, code, says, ae.Message, resetTime(h, time.Now()))
	case status == http.StatusNotFound || ae.Type == "not_found_error" || ae.Code == "model_not_found":
		return wire.Errorf(provider.ErrNotReady, "%s cannot serve that model: %s", name, says)
	case status >= 500 || ae.Type == "server_error" || ae.Code == "server_error":
		return wire.Errorf(provider.ErrOverload, "%s had a problem%s: %s Try again in a moment.", name, code, says)
	}
	return wire.Rejected(name, code, says, status)
}

// resetTime is when a limit lifts, the latest the headers say: Retry-After
// (seconds or an HTTP date), OpenAI's x-ratelimit-reset-{requests,tokens}
// (durations such as "6m0s") and OpenRouter's x-ratelimit-reset (Unix
// milliseconds). Zero when none is given.
func resetTime(h http.Header, now time.Time) time.Time {
	until := wire.RetryAfter(h, now)
	later := func(t time.Time) {
		if t.After(until) {
			until = t
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
