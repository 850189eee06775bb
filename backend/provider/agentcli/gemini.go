package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"conch/backend/provider"
	"conch/backend/task"
)

// geminiNoAuth is the reason given when no sign-in can be found.
const geminiNoAuth = "Gemini CLI has no auth method set: run gemini once to sign in, or set GEMINI_API_KEY"

// Gemini is Google's Gemini CLI driven in its Agent Client Protocol mode,
// `gemini --acp`: JSON-RPC on its stdio (docs/agents/gemini.md). Each
// request is one session and one prompt. It runs in its default approval
// mode, where writes, commands and MCP calls come to Conch first
// (session/request_permission) and Conch's gate answers: at once in auto,
// by asking the person in ask and edits, by refusing in plan (where it
// also runs in its own plan mode, which offers no shell). It runs with
// --skip-trust: the person chose the folder in Conch.
type Gemini struct {
	cfg Config
}

// NewGemini returns the Gemini CLI provider for cfg.
func NewGemini(cfg Config) *Gemini { return &Gemini{cfg: cfg} }

// Info reports whether gemini is on PATH and has a way to sign in: an
// API key or Vertex/GCA variable, or a sign-in saved under ~/.gemini.
// Running gemini itself to find out would cost a model call.
func (g *Gemini) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID:       g.cfg.ID,
		Name:     orDefault(g.cfg.Name, "Gemini CLI"),
		Kind:     "gemini",
		Category: provider.CodingAgent,
		CanAsk:   true,
		Models:   models(g.cfg.Model, "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"),
	}
	if _, ok := g.cfg.installed(ctx, geminiFloor, &info); !ok {
		return info
	}
	if !g.signedIn() {
		info.Reason = geminiNoAuth
		return info
	}
	info.Ready = true
	return info
}

func (g *Gemini) signedIn() bool {
	for _, key := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"} {
		if v, ok := g.cfg.getenv(key); ok && v != "" {
			return true
		}
	}
	home, ok := g.cfg.getenv("HOME")
	if !ok || home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return true // cannot tell: let a request find out
		}
	}
	dir := filepath.Join(home, ".gemini")
	if _, err := os.Stat(filepath.Join(dir, "oauth_creds.json")); err == nil {
		return true
	}
	b, err := os.ReadFile(filepath.Join(dir, "settings.json"))
	return err == nil && (strings.Contains(string(b), "selectedAuthType") || strings.Contains(string(b), "selectedType"))
}

// geminiModes maps Conch's modes to --approval-mode.
var geminiModes = map[task.Mode]string{task.Plan: "plan", task.Ask: "default", task.Edits: "default", task.Auto: "default"}

// Stream runs one prompt of a `gemini --acp` session for req.
func (g *Gemini) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	bin, approval, err := g.cfg.command(ctx, geminiFloor, req, geminiModes)
	if err != nil {
		return nil, err
	}
	args := []string{"--acp", "--skip-trust", "--approval-mode", approval}
	if model := g.cfg.model(req); model != "" {
		args = append(args, "-m", model)
	}
	srv, err := toolServer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("gemini: serve Conch's tools: %w", err)
	}
	// One process, not a launcher that ignores SIGTERM and a child.
	cfg := g.cfg.with(append([]string{"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1"}, req.Env...))
	s := &geminiSession{req: req, srv: srv, calls: map[string]geminiCall{}, attempts: g.attempts()}
	ch, err := launchRPC(ctx, cfg, "gemini", bin, args, req.Cwd, req, func(e emitter) rpcSession {
		s.e = e
		return s
	})
	if err != nil {
		srv.Close()
	}
	return ch, err
}

// geminiSession is one prompt of one ACP session.
type geminiSession struct {
	req provider.Request
	srv *askServer
	e   emitter

	attempts int // general.maxAttempts: tries of each model call

	mu      sync.Mutex
	failing string                // the attempt stderr says failed, while it says why
	why     string                // what it says
	calls   map[string]geminiCall // tool calls seen, by toolCallId
	wrote   bool                  // some text was sent
	between bool                  // a tool ran since the last text
}

// geminiCall is an ACP tool call, as session/update and
// session/request_permission give it.
type geminiCall struct {
	ToolCallID string `json:"toolCallId"`
	Status     string `json:"status"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	Locations  []struct {
		Path string `json:"path"`
	} `json:"locations"`
	Content []struct {
		Type string `json:"type"`
		Path string `json:"path"`
		// OldText is the file before a diff (null: a new file), NewText
		// after it.
		OldText *string `json:"oldText"`
		NewText string  `json:"newText"`
	} `json:"content"`
}

// write is the first file change the call carries, for its question.
func (c geminiCall) write(cwd string) *provider.Write {
	for _, ct := range c.Content {
		if ct.Type != "diff" || ct.Path == "" {
			continue
		}
		if ct.OldText == nil {
			return &provider.Write{Path: relPath(cwd, ct.Path), New: ct.NewText, Whole: true}
		}
		return &provider.Write{Path: relPath(cwd, ct.Path), Old: *ct.OldText, New: ct.NewText}
	}
	return nil
}

// tool is the CLI's name of the call's tool: toolCallId is
// "<tool>__<call id>".
func (c geminiCall) tool() string {
	name, _, _ := strings.Cut(c.ToolCallID, "__")
	return name
}

// paths are the files the call names.
func (c geminiCall) paths() []string {
	var out []string
	for _, l := range c.Locations {
		out = append(out, l.Path)
	}
	for _, ct := range c.Content {
		if ct.Type == "diff" && ct.Path != "" && !slices.Contains(out, ct.Path) {
			out = append(out, ct.Path)
		}
	}
	return out
}

func (s *geminiSession) drive(ctx context.Context, r *rpcRun) (string, error) {
	defer s.srv.Close()
	if err := r.call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "conch", "title": "Conch", "version": "1"},
	}, nil); err != nil {
		return "", geminiCallError(err)
	}
	servers := []any{}
	if s.srv != nil {
		servers = append(servers, map[string]any{"type": "http", "name": "conch", "url": s.srv.url, "headers": []any{}})
	}
	var session struct {
		SessionID string `json:"sessionId"`
	}
	if err := r.call(ctx, "session/new", map[string]any{"cwd": s.req.Cwd, "mcpServers": servers}, &session); err != nil {
		return "", geminiCallError(err)
	}
	var done struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			Quota struct {
				Tokens struct {
					Input  int `json:"input_tokens"`
					Output int `json:"output_tokens"`
				} `json:"token_count"`
			} `json:"quota"`
		} `json:"_meta"`
	}
	text := prompt(s.req)
	if err := r.call(ctx, "session/prompt", map[string]any{"sessionId": session.SessionID,
		"prompt": []any{map[string]any{"type": "text", "text": text}}}, &done); err != nil {
		return "", geminiCallError(err)
	}
	t := done.Meta.Quota.Tokens
	s.e.usage(provider.Usage{InputTokens: t.Input, OutputTokens: t.Output})
	switch done.StopReason {
	case "end_turn", "":
		return "end_turn", nil
	case "cancelled":
		return "", errors.New("gemini: the prompt was cancelled")
	case "max_turn_requests":
		return "", errors.New("gemini stopped: it reached its turn limit")
	case "max_tokens":
		return "", errors.New("gemini stopped: the conversation no longer fits its context")
	}
	return done.StopReason, nil
}

func (s *geminiSession) notify(method string, params json.RawMessage) error {
	if method != "session/update" {
		return nil
	}
	var p struct {
		Update struct {
			Kind    string          `json:"sessionUpdate"`
			Content json.RawMessage `json:"content"` // a block, or a tool's list
		} `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	switch p.Update.Kind {
	case "agent_message_chunk":
		var block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p.Update.Content, &block)
		text := block.Text
		if block.Type != "text" || text == "" || strings.HasPrefix(text, "[MODE_UPDATE]") {
			return nil
		}
		s.mu.Lock()
		// The messages of one reply do not run together: a tool between
		// two pieces of text starts a new one.
		if s.wrote && s.between {
			text = "\n\n" + text
		}
		s.wrote, s.between = true, false
		s.mu.Unlock()
		s.e.text(text)
	case "tool_call", "tool_call_update":
		var u struct {
			Update geminiCall `json:"update"`
		}
		if json.Unmarshal(params, &u) != nil {
			return nil
		}
		s.mu.Lock()
		c := s.calls[u.Update.ToolCallID]
		c.ToolCallID, c.Status = u.Update.ToolCallID, u.Update.Status
		if u.Update.Title != "" {
			c.Title = u.Update.Title
		}
		if u.Update.Kind != "" {
			c.Kind = u.Update.Kind
		}
		if len(u.Update.Locations) > 0 {
			c.Locations = u.Update.Locations
		}
		s.calls[c.ToolCallID] = c
		s.between = true
		s.mu.Unlock()
		if c.Status == "completed" || c.Status == "failed" {
			s.stepDone(c)
		}
	}
	return nil
}

// stepDone shows a call that has run.
func (s *geminiSession) stepDone(c geminiCall) {
	if strings.HasPrefix(c.tool(), "mcp_conch_") {
		return // Conch's own tools show as their calls
	}
	a := s.action(c)
	text := geminiStep(c, s.req.Cwd)
	if c.Status == "failed" {
		text += " (failed)"
	}
	s.e.emit(provider.Event{Kind: provider.StepEvent, Text: text, Action: &a})
}

// action is a call for Conch's gate and guard.
func (s *geminiSession) action(c geminiCall) provider.Action {
	cwd := s.req.Cwd
	switch c.Kind {
	case "execute":
		return provider.Action{Tool: c.tool(), Detail: fmt.Sprintf("Run `%s` in %s?", c.Title, tilde(cwd)), Effect: "command", Command: c.Title}
	case "edit", "delete", "move":
		paths := c.paths()
		var shown []string
		for _, p := range paths {
			shown = append(shown, relPath(cwd, p))
		}
		what := orDefault(strings.Join(shown, ", "), c.Title)
		return provider.Action{Tool: c.tool(), Detail: "Edit " + what + "?", Effect: "edit", Paths: paths, Write: c.write(cwd)}
	case "read", "search", "think":
		return provider.Action{Tool: c.tool(), Detail: "Read " + c.Title + "?", Effect: "none", Paths: c.paths()}
	case "fetch":
		return provider.Action{Tool: c.tool(), Detail: "Fetch " + c.Title + "?", Effect: "network", URL: c.Title}
	}
	// A tool Conch does not know (another MCP server's) may do anything.
	return provider.Action{Tool: c.tool(), Detail: fmt.Sprintf("Use %s (%s)?", c.tool(), c.Title), Effect: "network"}
}

// request answers the CLI's permission requests through Conch's gate.
func (s *geminiSession) request(ctx context.Context, method string, params json.RawMessage) (any, *rpcError) {
	if method != "session/request_permission" {
		return nil, &rpcError{Code: rpcNoMethod, Message: "Conch does not answer " + method}
	}
	var p struct {
		ToolCall geminiCall `json:"toolCall"`
		Options  []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
	}
	c := p.ToolCall
	s.mu.Lock()
	s.calls[c.ToolCallID] = c
	s.mu.Unlock()
	pick := func(kind, fallback string) any {
		for _, o := range p.Options {
			if o.Kind == kind {
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}
			}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": fallback}}
	}
	// Conch's own tools pass its gate when they run.
	if strings.HasPrefix(c.tool(), "mcp_conch_") {
		return pick("allow_once", "proceed_once"), nil
	}
	a := s.action(c)
	ok := false
	if s.req.Ask != nil {
		var err error
		if ok, err = s.req.Ask(ctx, a); err != nil {
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
	}
	if ok {
		return pick("allow_once", "proceed_once"), nil
	}
	// A declined call gets no update of its own: it shows here.
	s.mu.Lock()
	s.between = true
	s.mu.Unlock()
	s.e.step(declinedStep(a.Detail))
	return pick("reject_once", "cancel"), nil
}

func (s *geminiSession) failure(exit exitStatus) error { return exit.failure("gemini") }

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

// attempts is how many times the CLI tries a model call: its settings'
// general.maxAttempts, 10 when unset (the CLI's default and cap).
func (g *Gemini) attempts() int {
	home, _ := g.cfg.getenv("GEMINI_CLI_HOME")
	if home == "" {
		home, _ = g.cfg.getenv("HOME")
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var settings struct {
		General struct {
			MaxAttempts int `json:"maxAttempts"`
		} `json:"general"`
	}
	if b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json")); err == nil {
		_ = json.Unmarshal(b, &settings)
	}
	if n := settings.General.MaxAttempts; n > 0 && n <= 10 {
		return n
	}
	return 10
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

// geminiStep says what a call did, in the past tense.
func geminiStep(c geminiCall, cwd string) string {
	path := c.Title
	if ps := c.paths(); len(ps) > 0 {
		path = relPath(cwd, ps[0])
	}
	path = shorten(path)
	title := shorten(c.Title)
	switch c.tool() {
	case "read_file", "read_many_files":
		return "Read " + path
	case "run_shell_command":
		return "Ran " + title
	case "replace", "edit":
		return "Edited " + path
	case "write_file":
		return "Wrote " + path
	case "grep_search", "search_file_content", "grep":
		return "Searched for " + title
	case "glob":
		return "Listed files matching " + title
	case "list_directory":
		return "Listed " + title
	case "google_web_search":
		return "Searched the web for " + title
	case "web_fetch":
		return "Fetched " + title
	case "write_todos":
		return "Updated the to-do list"
	}
	if title != "" {
		return "Used " + c.tool() + ": " + title
	}
	return "Used " + c.tool()
}
