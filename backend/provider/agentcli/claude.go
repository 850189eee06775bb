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

// Claude is Claude Code run as `claude -p` in stream-json mode
// (docs/agents/claude-code.md). Conch is its permission authority in every
// mode: it runs with --permission-prompt-tool naming the approve tool of
// an MCP server Conch serves for the run (see askServer), so each step it
// would ask about comes to Request.Ask, where Conch's gate answers: at
// once in auto (so it never needs bypassPermissions, which root may not
// use), by asking the person in ask and edits, by refusing in plan. The
// same server offers Conch's own tools (Request.Tools).
type Claude struct {
	cfg   Config
	ready readyCache // the last `auth status` answer
}

// NewClaude returns the Claude Code provider for cfg.
func NewClaude(cfg Config) *Claude { return &Claude{cfg: cfg} }

// claudeModes maps Conch's modes to --permission-mode. Every mode but plan
// is Claude's default, which asks before edits and commands; Conch's gate
// then answers by the chat's mode. Plan keeps Claude planning.
var claudeModes = map[task.Mode]string{
	task.Plan:  "plan",
	task.Ask:   "default",
	task.Edits: "default",
	task.Auto:  "default",
}

// Info reports whether claude is on PATH and logged in (`claude auth
// status`, given three seconds; when it cannot tell, it says ready). The
// answer is kept for a while (readyTTL), since Info is asked every turn.
func (c *Claude) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID:       c.cfg.ID,
		Name:     orDefault(c.cfg.Name, "Claude Code"),
		Kind:     "claude-code",
		Category: provider.CodingAgent,
		CanAsk:   true,
		Models:   models(c.cfg.Model, "sonnet", "haiku", "sonnet", "opus", "haiku"),
	}
	bin, ok := c.cfg.installed(ctx, claudeFloor, &info)
	if !ok {
		return info
	}
	st, ok := c.ready.get(func() (readiness, bool) { return c.probe(ctx, bin) })
	info.Ready, info.Reason = !ok || st.ready, st.reason // it could not tell: a turn will say what is wrong
	return info
}

// probe asks `claude auth status` whether it is logged in. An older
// claude without `auth status` fails in other words; only an answer about
// logging in says it is logged out.
func (c *Claude) probe(ctx context.Context, bin string) (readiness, bool) {
	code, out, ok := probe(ctx, c.cfg, bin, "auth", "status")
	if !ok {
		return readiness{}, false
	}
	if lower := strings.ToLower(out); code != 0 && (strings.Contains(lower, "log") || strings.Contains(lower, "auth")) {
		reason := claudeLogin
		if !strings.HasPrefix(out, "{") {
			reason = firstLine(out, claudeLogin)
		}
		return readiness{reason: reason}, true
	}
	return readiness{ready: true}, true
}

// Stream runs claude for req. The conversation goes on stdin as one user
// message (see the package doc), and stdin is closed after it, so the CLI
// ends after its turn.
func (c *Claude) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	bin, pm, err := c.cfg.command(ctx, claudeFloor, req, claudeModes)
	if err != nil {
		return nil, err
	}
	args := []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
		"--include-partial-messages"}
	if m := c.cfg.model(req); m != "" {
		args = append(args, "--model", m)
	}
	args = append(args, "--permission-mode", pm)
	input, err := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": prompt(req)},
	})
	if err != nil {
		return nil, err
	}
	input = append(input, '\n')
	opts := serveOpts{Ask: req.Ask, Cwd: req.Cwd}
	if req.Call != nil {
		opts.Tools, opts.Call = req.Tools, req.Call
	}
	var srv *askServer
	if opts.Ask != nil || len(opts.Tools) > 0 {
		if srv, err = startAskServer(ctx, opts); err != nil {
			return nil, fmt.Errorf("claude: serve its questions: %w", err)
		}
		args = append(args, "--mcp-config", srv.config)
		if opts.Ask != nil {
			args = append(args, "--permission-prompt-tool", askToolName)
		}
		// Conch's own tools pass its gate when they run; Claude need not
		// ask about them first.
		var allowed []string
		for _, t := range opts.Tools {
			allowed = append(allowed, "mcp__conch__"+t.Name)
		}
		if len(allowed) > 0 {
			args = append(args, "--allowedTools", strings.Join(allowed, ","))
		}
	}
	ch, err := launch(ctx, c.cfg.with(req.Env), "claude", bin, args, req.Cwd, req.Mark, input, func(p *proc, e emitter) handler {
		return &claudeHandler{e: e, cwd: req.Cwd, srv: srv, uses: map[string]claudeBlock{}, streamed: map[string]bool{}}
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
	srv *askServer // serves the CLI's questions and Conch's tools; nil when neither

	lastID   string                 // the message the last text came from
	streamID string                 // the message being streamed, from its message_start
	wrote    bool                   // some text was sent
	streamed map[string]bool        // messages whose text came as partial messages
	uses     map[string]claudeBlock // tool uses waiting for their results, by id
	resetsAt time.Time
	apiError string // an assistant frame's error, e.g. rate_limit
	result   *claudeResult
}

type claudeBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// A tool_result's.
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Error           string  `json:"error"`
	RateLimitInfo   struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
	// A stream_event's: one event of the model's streamed answer.
	Event struct {
		Type    string `json:"type"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"` // a message_start's
		ContentBlock struct {
			Type string `json:"type"`
		} `json:"content_block"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	} `json:"event"`
	APIMessageID string `json:"api_message_id"`
	// A user line's: who allowed or refused each tool it answers.
	ToolResultMeta []struct {
		ID                 string `json:"id"`
		PermissionDecision struct {
			Decision string `json:"decision"`
		} `json:"permission_decision"`
		NonExecutionKind string `json:"non_execution_kind"`
	} `json:"tool_result_meta"`
}

// blocks reads a message's content: blocks, or a plain string.
func (l claudeLine) blocks() []claudeBlock {
	var bs []claudeBlock
	if json.Unmarshal(l.Message.Content, &bs) == nil {
		return bs
	}
	return nil
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
	// A subagent's words and steps are its report to Claude, not the reply.
	sub := l.ParentToolUseID != nil && *l.ParentToolUseID != ""
	switch l.Type {
	case "stream_event":
		if sub {
			break
		}
		// Claude Code 2.1.197 names the message only in its
		// message_start; later ones give every event its api_message_id.
		if l.Event.Type == "message_start" {
			h.streamID = l.Event.Message.ID
		}
		id := orDefault(l.APIMessageID, h.streamID)
		switch l.Event.Type {
		case "content_block_start":
			if l.Event.ContentBlock.Type == "text" && h.wrote && id != h.lastID {
				// The messages of one reply do not run together.
				h.e.text("\n\n")
				h.lastID = id
			}
		case "content_block_delta":
			if l.Event.Delta.Type == "text_delta" && l.Event.Delta.Text != "" {
				h.streamed[id] = true
				h.lastID, h.wrote = id, true
				h.e.text(l.Event.Delta.Text)
			}
		}
	case "assistant":
		if l.Error != "" {
			h.apiError = l.Error
		}
		// A frame the CLI made up to carry an error (a limit, a login)
		// is reported once, as the result's error, not as reply text.
		synthetic := l.Error != "" || l.Message.Model == "<synthetic>"
		for _, b := range l.blocks() {
			switch b.Type {
			case "text":
				if sub || synthetic || b.Text == "" || h.streamed[l.Message.ID] {
					continue
				}
				text := b.Text
				if h.wrote && l.Message.ID != h.lastID {
					text = "\n\n" + text
				}
				h.lastID, h.wrote = l.Message.ID, true
				h.e.text(text)
			case "tool_use":
				if !sub && b.ID != "" {
					h.uses[b.ID] = b // shown once it has run, or was refused
				}
			}
		}
	case "user":
		h.results(l)
	case "system":
		if l.Subtype == "api_retry" {
			h.e.notice(claudeRetry(raw))
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

// results shows the steps whose tools have now run, or were refused.
func (h *claudeHandler) results(l claudeLine) {
	rejected := map[string]bool{}
	for _, m := range l.ToolResultMeta {
		if m.PermissionDecision.Decision == "reject" || m.NonExecutionKind != "" {
			rejected[m.ID] = true
		}
	}
	for _, b := range l.blocks() {
		if b.Type != "tool_result" {
			continue
		}
		use, ok := h.uses[b.ToolUseID]
		if !ok {
			continue
		}
		delete(h.uses, b.ToolUseID)
		if strings.HasPrefix(use.Name, "mcp__conch__") {
			continue // Conch's own tools show as their calls
		}
		a := claudeAction(use.Name, use.Input, h.cwd)
		switch {
		case rejected[b.ToolUseID] || h.srv.wasRefused(b.ToolUseID):
			h.e.step(declinedStep(a.Detail))
		case b.IsError:
			h.e.emit(provider.Event{Kind: provider.StepEvent, Text: claudeStep(use.Name, use.Input, h.cwd) + " (failed)", Action: &a})
		default:
			h.e.emit(provider.Event{Kind: provider.StepEvent, Text: claudeStep(use.Name, use.Input, h.cwd), Action: &a})
		}
	}
}

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

// claudeAction is a step of Claude Code's, for Conch's gate and guard:
// what it does in the person's words, what it may change, and the files
// it touches (none may lie outside the chat's folder).
func claudeAction(name string, raw json.RawMessage, cwd string) provider.Action {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	file := orDefault(str(in, "file_path"), str(in, "notebook_path"))
	path := relPath(cwd, file)
	var paths []string
	if file != "" {
		paths = []string{file}
	}
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		cmd := str(in, "command")
		if cwd == "" {
			return provider.Action{Tool: name, Detail: fmt.Sprintf("Run `%s`?", cmd), Effect: "command", Command: cmd}
		}
		return provider.Action{Tool: name, Detail: fmt.Sprintf("Run `%s` in %s?", cmd, tilde(cwd)), Effect: "command", Command: cmd}
	case "Edit", "MultiEdit", "NotebookEdit":
		return provider.Action{Tool: name, Detail: "Edit " + path + "?", Effect: "edit", Paths: paths, Write: claudeEdit(name, raw, path)}
	case "Write":
		var w *provider.Write
		if content, ok := in["content"].(string); ok && path != "" {
			w = &provider.Write{Path: path, New: content, Whole: true}
		}
		return provider.Action{Tool: name, Detail: "Write " + path + "?", Effect: "edit", Paths: paths, Write: w}
	case "ExitPlanMode":
		// Leaving plan mode would widen the chat's mode: plan refuses it.
		return provider.Action{Tool: name, Detail: "Leave plan mode and start making changes?", Effect: "edit"}
	case "Read", "Glob", "Grep", "LS":
		if dir := str(in, "path"); dir != "" {
			paths = append(paths, dir)
		}
		detail := "Use " + name + "?"
		if path != "" {
			detail = "Read " + path + "?"
		}
		return provider.Action{Tool: name, Detail: detail, Effect: "none", Paths: paths}
	case "TodoWrite", "Task", "Agent", "ToolSearch", "AskUserQuestion", "EnterPlanMode":
		return provider.Action{Tool: name, Detail: "Use " + name + "?", Effect: "none"}
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

// claudeEdit is the piece an Edit or MultiEdit replaces, and what
// replaces it (MultiEdit's pieces one after the other); nil for a notebook.
func claudeEdit(name string, raw json.RawMessage, path string) *provider.Write {
	var in struct {
		Old   string `json:"old_string"`
		New   string `json:"new_string"`
		Edits []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
		} `json:"edits"`
	}
	if path == "" || json.Unmarshal(raw, &in) != nil {
		return nil
	}
	switch name {
	case "Edit":
		return &provider.Write{Path: path, Old: in.Old, New: in.New}
	case "MultiEdit":
		if len(in.Edits) == 0 {
			return nil
		}
		var old, next []string
		for _, e := range in.Edits {
			old, next = append(old, e.Old), append(next, e.New)
		}
		return &provider.Write{Path: path, Old: strings.Join(old, "\n…\n"), New: strings.Join(next, "\n…\n")}
	}
	return nil
}
