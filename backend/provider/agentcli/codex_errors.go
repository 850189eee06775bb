package agentcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"conch/backend/provider"
)

// reconnecting reads "Reconnecting... 2/5".
var reconnecting = regexp.MustCompile(`(\d+)\s*/\s*(\d+)`)

// codexRetry is the notice for an error codex will retry.
func codexRetry(f codexFail) string {
	count := ""
	if m := reconnecting.FindStringSubmatch(f.Message); m != nil {
		count = fmt.Sprintf(" (%s of %s)", m[1], m[2])
	}
	if strings.Contains(string(f.CodexErrorInfo), "429") || strings.Contains(f.AdditionalDetails, "429") {
		return "Codex is retrying after a rate limit" + count
	}
	return "Codex is reconnecting" + count
}

func isCodexLimit(msg string, info json.RawMessage) bool {
	lower := strings.ToLower(msg)
	return strings.Contains(string(info), "usageLimitExceeded") || strings.Contains(lower, "usage limit") ||
		strings.Contains(lower, "quota exceeded")
}

// codexError turns codex's failure into the error callers test for. A
// per-minute rate limit that outlasted codex's retries ("exceeded retry
// limit, last status: 429") is a limit too: another provider may carry on.
func codexError(msg string, info json.RawMessage) error {
	lower := strings.ToLower(msg)
	switch {
	case isCodexLimit(msg, info):
		return &provider.LimitError{Until: codexUntil(msg), Message: msg}
	case strings.Contains(lower, "last status: 429") || strings.Contains(string(info), `"httpStatusCode":429`):
		return &provider.LimitError{Message: "Codex hit a rate limit and gave up retrying: " + msg}
	case strings.Contains(lower, "not logged in") || strings.Contains(lower, "401 unauthorized") ||
		strings.Contains(lower, "codex login") || strings.Contains(lower, "missing environment variable"):
		return fmt.Errorf("%w: %s", provider.ErrAuth, msg)
	case strings.Contains(string(info), "internalServerError") || strings.Contains(lower, "high demand"):
		return fmt.Errorf("%w: %s", provider.ErrOverload, msg)
	}
	return errors.New("codex: " + msg)
}

// codexCallError words a refused thread/start or turn/start.
func codexCallError(err error) error {
	var ce *rpcCallError
	if errors.As(err, &ce) {
		return codexError(ce.Message, nil)
	}
	return err
}
