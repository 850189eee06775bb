package agentcli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"conch/backend/provider"
)

// Gemini CLI says nothing over ACP while it retries a model call, only on
// stderr: "Attempt 1 failed: <why, over several lines>. Retrying after
// 5983ms...".
var (
	geminiAttempt = regexp.MustCompile(`^Attempt (\d+) failed`)
	geminiRetry   = regexp.MustCompile(`Retrying after \d+ms`)
)

// stderr turns the CLI's retries into notices.
func (s *geminiSession) stderr(line string) {
	s.mu.Lock()
	if m := geminiAttempt.FindStringSubmatch(line); m != nil {
		s.failing, s.why = m[1], ""
	}
	attempt := s.failing
	if attempt != "" {
		s.why += " " + geminiRetry.Split(line, 2)[0]
	}
	why := strings.ToLower(s.why)
	retrying := attempt != "" && geminiRetry.MatchString(line)
	if retrying {
		s.failing, s.why = "", ""
	}
	s.mu.Unlock()
	if !retrying {
		return
	}
	count := fmt.Sprintf(" (%s of %d)", attempt, max(s.attempts-1, 1))
	if strings.Contains(why, "quota") || strings.Contains(why, "429") || strings.Contains(why, "resource has been exhausted") || strings.Contains(why, "rate limit") {
		s.e.notice("Gemini CLI is retrying after a rate limit" + count)
		return
	}
	s.e.notice("Gemini CLI is retrying after an API error" + count)
}

// geminiCallError turns a refused ACP call into the error callers test for:
// a failed model call answers with the HTTP status as its code.
func geminiCallError(err error) error {
	var ce *rpcCallError
	if !errors.As(err, &ce) {
		return err
	}
	msg := strings.TrimSpace(ce.Message)
	lower := strings.ToLower(msg)
	switch {
	case ce.Code == 429 || strings.Contains(lower, "exhausted your daily quota") || strings.Contains(lower, "quota exceeded"):
		return &provider.LimitError{Message: firstLine(msg, "Gemini reached its quota")}
	case ce.Code == 503 || ce.Code == 529 || strings.Contains(lower, "overloaded"):
		return fmt.Errorf("%w: %s", provider.ErrOverload, msg)
	case ce.Code == 401 || ce.Code == 403 || strings.Contains(lower, "api key") || strings.Contains(lower, "auth"):
		return fmt.Errorf("%w: %s", provider.ErrAuth, msg)
	}
	return errors.New("gemini: " + msg)
}
