package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
)

// claudeLogin is the reason given for a logged-out Claude Code when it
// gave none of its own.
const claudeLogin = "Not logged in · Please run /login"

// Claude is Claude Code run as `claude -p` in stream-json mode. Its
// permission questions are routed to Request.Ask through an MCP tool that
// Conch serves for the run (--permission-prompt-tool mcp__conch__approve;
// see askServer), so it can ask.
type Claude struct {
	cfg Config
}

// NewClaude returns the Claude Code provider for cfg.
func NewClaude(cfg Config) *Claude { return &Claude{cfg: cfg} }

// claudeModes maps Conch's modes to --permission-mode.
var claudeModes = map[task.Mode]string{
	task.Plan:  "plan",
	task.Ask:   "default",
	task.Edits: "acceptEdits",
	task.Auto:  "bypassPermissions",
}

// Info reports whether claude is on PATH and logged in (`claude auth
// status`, given three seconds; when it cannot tell, it says ready).
func (c *Claude) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID:       c.cfg.ID,
		Name:     orDefault(c.cfg.Name, "Claude Code"),
		Kind:     "claude-code",
		Category: provider.CodingAgent,
		CanAsk:   true,
		Models:   models(c.cfg.Model, "sonnet", "haiku", "sonnet", "opus", "haiku"),
	}
	bin, err := c.cfg.lookPath("claude")
	if err != nil {
		info.Reason = notFound("claude", "Claude Code")
		return info
	}
	// An older claude without `auth status` fails in other words; only
	// an answer about logging in says it is logged out.
	code, out, ok := probe(ctx, c.cfg, bin, "auth", "status")
	if lower := strings.ToLower(out); ok && code != 0 && (strings.Contains(lower, "log") || strings.Contains(lower, "auth")) {
		reason := claudeLogin
		if !strings.HasPrefix(out, "{") {
			reason = firstLine(out, claudeLogin)
		}
		info.Reason = reason
		return info
	}
	info.Ready = true
	return info
}

// Stream runs claude for req. The conversation goes on stdin as one user
// message (see the package doc). With Request.Ask set in ask or edits
// mode, the CLI's questions come to Ask through an MCP server on loopback
// that lives as long as the run.
func (c *Claude) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	pm, ok := claudeModes[mode(req)]
	if !ok {
		return nil, fmt.Errorf("claude: unknown mode %q", req.Mode)
	}
	bin, err := c.cfg.lookPath("claude")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", provider.ErrNotReady, notFound("claude", "Claude Code"))
	}
	args := []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	if m := c.cfg.model(req); m != "" {
		args = append(args, "--model", m)
	}
	args = append(args, "--permission-mode", pm)
	// Only ask and edits mode ask. In plan mode a question could only be
	// to leave plan mode (ExitPlanMode), which would widen the chat's
	// mode, so there the CLI denies every question itself.
	ask := req.Ask
	if m := mode(req); m != task.Ask && m != task.Edits {
		ask = nil
	}
	input, err := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": prompt(req)},
	})
	if err != nil {
		return nil, err
	}
	input = append(input, '\n')
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var srv *askServer
	if ask != nil {
		if srv, err = startAskServer(ctx, serveOpts{Ask: ask, Cwd: req.Cwd}); err != nil {
			return nil, fmt.Errorf("claude: serve its questions: %w", err)
		}
		args = append(args, "--mcp-config", srv.config, "--permission-prompt-tool", askToolName)
	}
	ch, err := launch(ctx, c.cfg, "claude", bin, args, req.Cwd, req.Mark, input, func(p *proc, e emitter) handler {
		return &claudeHandler{e: e, cwd: req.Cwd, srv: srv}
	})
	if err != nil && srv != nil {
		srv.Close()
	}
	return ch, err
}

// claudeHandler maps Claude Code's stream-json lines to events.
type claudeHandler struct {
	e   emitter
	cwd string
	srv *askServer // serves the CLI's questions; nil when it may not ask

	lastID   string // message.id of the last frame that gave text
	wrote    bool   // some text was sent
	resetsAt time.Time
	apiError string // an assistant frame's error, e.g. rate_limit
	result   *claudeResult
}

type claudeBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type claudeLine struct {
	Type    string `json:"type"`
	Message struct {
		ID      string        `json:"id"`
		Model   string        `json:"model"`
		Content []claudeBlock `json:"content"`
	} `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Error           string  `json:"error"`
	RateLimitInfo   struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
}

type claudeResult struct {
	Subtype      string  `json:"subtype"`
	IsError      bool    `json:"is_error"`
	Result       string  `json:"result"`
	StopReason   string  `json:"stop_reason"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        struct {
		Input       int `json:"input_tokens"`
		Output      int `json:"output_tokens"`
		CacheRead   int `json:"cache_read_input_tokens"`
		CacheCreate int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	Errors         []any `json:"errors"`
	APIErrorStatus any   `json:"api_error_status"`
}

func (h *claudeHandler) line(raw []byte) error {
	var l claudeLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("%w: claude: %v", provider.ErrProtocol, err)
	}
	switch l.Type {
	case "assistant":
		if l.Error != "" {
			h.apiError = l.Error
		}
		sub := l.ParentToolUseID != nil && *l.ParentToolUseID != ""
		// A frame the CLI made up to carry an error (a limit, a login)
		// is reported once, as the result's error, not as reply text.
		synthetic := l.Error != "" || l.Message.Model == "<synthetic>"
		for _, b := range l.Message.Content {
			switch b.Type {
			case "text":
				// A subagent's words are its report to Claude, not the reply.
				if sub || synthetic || b.Text == "" {
					continue
				}
				text := b.Text
				if h.wrote && l.Message.ID != h.lastID {
					text = "\n\n" + text
				}
				h.lastID, h.wrote = l.Message.ID, true
				h.e.text(text)
			case "tool_use":
				h.e.step(claudeStep(b.Name, b.Input, h.cwd))
			}
		}
	case "rate_limit_event":
		if l.RateLimitInfo.Status == "rejected" && l.RateLimitInfo.ResetsAt > 0 {
			h.resetsAt = time.Unix(l.RateLimitInfo.ResetsAt, 0)
		}
	case "result":
		var r claudeResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%w: claude result: %v", provider.ErrProtocol, err)
		}
		h.result = &r
		h.e.usage(provider.Usage{
			InputTokens:      r.Usage.Input,
			OutputTokens:     r.Usage.Output,
			CacheReadTokens:  r.Usage.CacheRead,
			CacheWriteTokens: r.Usage.CacheCreate,
			CostUSD:          r.TotalCostUSD,
		})
	}
	return nil
}

// release stops the question server once the CLI has exited.
func (h *claudeHandler) release() {
	if h.srv != nil {
		h.srv.Close()
	}
}

func (h *claudeHandler) finish(exit exitStatus) provider.Event {
	r := h.result
	if r == nil {
		if exit.code != 0 {
			return provider.Event{Kind: provider.ErrorEvent, Err: exit.failure("claude")}
		}
		return provider.Event{Kind: provider.ErrorEvent, Err: fmt.Errorf("%w: claude exited without a result", provider.ErrProtocol)}
	}
	if r.IsError || strings.HasPrefix(r.Subtype, "error") {
		return provider.Event{Kind: provider.ErrorEvent, Err: h.resultError(r)}
	}
	stop := r.StopReason
	if stop == "" {
		stop = r.Subtype
	}
	return provider.Event{Kind: provider.DoneEvent, StopReason: stop}
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

// claudeStep says what a tool_use did, in the past tense.
func claudeStep(name string, raw json.RawMessage, cwd string) string {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	path := func() string {
		p := str(in, "file_path")
		if p == "" {
			p = str(in, "notebook_path")
		}
		if p == "" {
			p = str(in, "path")
		}
		return shorten(relPath(cwd, p))
	}
	switch name {
	case "Read":
		return "Read " + path()
	case "Bash":
		return "Ran " + shorten(str(in, "command"))
	case "Edit", "MultiEdit", "NotebookEdit":
		return "Edited " + path()
	case "Write":
		return "Wrote " + path()
	case "Grep":
		return "Searched for " + shorten(str(in, "pattern"))
	case "Glob":
		return "Listed files matching " + shorten(str(in, "pattern"))
	case "LS":
		return "Listed " + path()
	case "WebFetch":
		return "Fetched " + shorten(str(in, "url"))
	case "WebSearch":
		return "Searched the web for " + shorten(str(in, "query"))
	case "Task", "Agent":
		return "Delegated " + shorten(orDefault(str(in, "description"), "a task"))
	case "TodoWrite":
		return "Updated the to-do list"
	}
	return "Used " + name
}

// claudeAction is the step Claude Code asks permission for, for Conch's
// gate: what it does in the person's words, and what it may change.
func claudeAction(name string, raw json.RawMessage, cwd string) provider.Action {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	path := relPath(cwd, orDefault(str(in, "file_path"), str(in, "notebook_path")))
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		cmd := str(in, "command")
		if cwd == "" {
			return provider.Action{Tool: name, Detail: fmt.Sprintf("Run `%s`?", cmd), Effect: "command", Command: cmd}
		}
		return provider.Action{Tool: name, Detail: fmt.Sprintf("Run `%s` in %s?", cmd, tilde(cwd)), Effect: "command", Command: cmd}
	case "Edit", "MultiEdit", "NotebookEdit":
		return provider.Action{Tool: name, Detail: "Edit " + path + "?", Effect: "edit"}
	case "Write":
		return provider.Action{Tool: name, Detail: "Write " + path + "?", Effect: "edit"}
	case "Read", "Glob", "Grep", "LS", "TodoWrite", "Task", "ExitPlanMode":
		detail := "Use " + name + "?"
		if path != "" {
			detail = "Read " + path + "?"
		}
		return provider.Action{Tool: name, Detail: detail, Effect: "none"}
	case "WebFetch":
		return provider.Action{Tool: name, Detail: "Fetch " + str(in, "url") + "?", Effect: "network", URL: str(in, "url")}
	case "WebSearch":
		return provider.Action{Tool: name, Detail: "Search the web for " + str(in, "query") + "?", Effect: "network"}
	}
	args := string(raw)
	if r := []rune(args); len(r) > 200 {
		args = string(r[:199]) + "…"
	}
	// A tool Conch does not know may do anything: it asks.
	return provider.Action{Tool: name, Detail: fmt.Sprintf("Use %s with %s?", name, args), Effect: "network"}
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// models makes a static model list; a configured model leads it and is
// the default.
func models(configured, def, fast string, list ...string) provider.Models {
	if configured != "" {
		def = configured
		found := false
		for _, m := range list {
			found = found || m == configured
		}
		if !found {
			list = append([]string{configured}, list...)
		}
	}
	return provider.Models{Default: def, Fast: fast, List: list}
}
