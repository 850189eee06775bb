package agentcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"conch/backend/provider"
)

// claudeRetry is the notice of a system/api_retry line.
func claudeRetry(raw []byte) string {
	var r struct {
		Attempt     int    `json:"attempt"`
		MaxRetries  int    `json:"max_retries"`
		ErrorStatus int    `json:"error_status"`
		Error       string `json:"error"`
	}
	_ = json.Unmarshal(raw, &r)
	count := ""
	if r.Attempt > 0 && r.MaxRetries > 0 {
		count = fmt.Sprintf(" (%d of %d)", r.Attempt, r.MaxRetries)
	}
	switch {
	case r.Error == "rate_limit" || r.ErrorStatus == 429:
		return "Claude Code is retrying after a rate limit" + count
	case r.Error == "overloaded" || r.ErrorStatus == 529:
		return "Claude Code is retrying: the API is overloaded" + count
	}
	return "Claude Code is retrying after an API error" + count
}

// resultError turns a failed result into the error callers test for.
func (h *claudeHandler) resultError(r *claudeResult) error {
	text := strings.TrimSpace(r.Result)
	if text == "" {
		var parts []string
		for _, e := range r.Errors {
			if s, ok := e.(string); ok {
				parts = append(parts, s)
			}
		}
		text = strings.Join(parts, "; ")
	}
	lower := strings.ToLower(text)
	status := fmt.Sprint(r.APIErrorStatus)
	switch {
	case strings.Contains(lower, "limit reached") || strings.Contains(lower, "hit your limit") ||
		h.apiError == "rate_limit" || h.apiError == "billing_error" || status == "429":
		// Most exact first: the epoch in the text, the rate_limit_event's
		// resetsAt, then the wall-clock time the text names.
		until := claudeEpoch(text)
		if until.IsZero() {
			until = h.resetsAt
		}
		if until.IsZero() {
			until = claudeResets(text)
		}
		msg := text
		if i := strings.IndexByte(msg, '|'); i > 0 && limitEpoch.MatchString(msg) {
			msg = msg[:i]
		}
		return &provider.LimitError{Until: until, Message: msg}
	case strings.Contains(lower, "/login") || strings.Contains(lower, "invalid api key") ||
		strings.Contains(lower, "not logged in") || h.apiError == "authentication_failed":
		return fmt.Errorf("%w: %s", provider.ErrAuth, orDefault(text, claudeLogin))
	case status == "529" || strings.Contains(lower, "overloaded"):
		return fmt.Errorf("%w: %s", provider.ErrOverload, text)
	case r.Subtype == "error_max_turns":
		return errors.New("claude stopped: it reached its turn limit")
	case r.Subtype == "error_max_budget_usd":
		return errors.New("claude stopped: it reached its budget")
	case text == "":
		return fmt.Errorf("claude failed (%s)", r.Subtype)
	}
	return errors.New("claude: " + text)
}
