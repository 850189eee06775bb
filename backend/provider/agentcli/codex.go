package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
)

// Codex is OpenAI's Codex CLI driven as `codex app-server`: JSON-RPC on
// its stdio (docs/agents/codex.md). Each request is one ephemeral thread
// and one turn. Codex runs with approval policy "untrusted", so every step
// with a side effect comes to Conch first (item/commandExecution and
// item/fileChange approvals) and Conch's gate answers: at once in auto,
// by asking the person in ask and edits, by refusing in plan. Its sandbox
// keeps writes in the chat's folder (read-only in plan). Conch's own tools
// reach it over MCP (see askServer).
type Codex struct {
	cfg   Config
	ready readyCache
}

// NewCodex returns the Codex provider for cfg.
func NewCodex(cfg Config) *Codex { return &Codex{cfg: cfg} }

// codexClient is how Conch names itself to codex (its originator).
var codexClient = map[string]any{"name": "conch", "title": "Conch", "version": "1"}

// Info reports whether codex is installed and can run a turn: its default
// provider's key variable is set, or it is logged in. It asks a short-lived
// app-server (modelProvider/list, account/read, config/read, model/list), since `codex
// login status` knows only logins and says "Not logged in" for a working
// API-key provider. The answer is kept for a few seconds.
func (c *Codex) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID:       c.cfg.ID,
		Name:     orDefault(c.cfg.Name, "Codex"),
		Kind:     "codex",
		Category: provider.CodingAgent,
		CanAsk:   true,
		Models:   models(c.cfg.Model, "gpt-5.5", "gpt-5.5", "gpt-5.5"),
	}
	bin, ok := c.cfg.installed(ctx, codexFloor, &info)
	if !ok {
		return info
	}
	st, ok := c.ready.get(func() (readiness, bool) { return c.probe(ctx, bin) })
	if !ok {
		info.Ready = true // it could not tell; a turn will say what is wrong
		return info
	}
	info.Ready, info.Reason = st.ready, st.reason
	if len(st.models) > 0 {
		info.Models = models(c.cfg.Model, orDefault(st.model, "gpt-5.5"), orDefault(st.model, "gpt-5.5"), st.models...)
	}
	return info
}

// probe asks an app-server whether codex can run.
func (c *Codex) probe(ctx context.Context, bin string) (readiness, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	s := &codexProbe{cfg: c.cfg}
	ch, err := launchRPC(ctx, c.cfg, "codex", bin, []string{"app-server"}, "", provider.Request{}, func(emitter) rpcSession { return s })
	if err != nil {
		return readiness{}, false
	}
	for range ch {
	}
	return s.got, s.ok
}

// codexProbe is the session of a readiness probe.
type codexProbe struct {
	cfg Config
	got readiness
	ok  bool
}

func (s *codexProbe) drive(ctx context.Context, r *rpcRun) (string, error) {
	if err := codexHello(ctx, r); err != nil {
		return "", err
	}
	var providers struct {
		Data []struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Settings struct {
				Type string `json:"type"`
				Auth struct {
					Mode   string `json:"mode"`
					EnvKey string `json:"envKey"`
				} `json:"auth"`
			} `json:"settings"`
		} `json:"data"`
		Default string `json:"defaultProviderId"`
	}
	if err := r.call(ctx, "modelProvider/list", map[string]any{}, &providers); err != nil {
		return "", err
	}
	st := readiness{ready: true}
	for _, p := range providers.Data {
		if p.ID != providers.Default {
			continue
		}
		if p.Settings.Auth.Mode == "environmentVariable" && p.Settings.Auth.EnvKey != "" {
			if v, _ := s.cfg.getenv(p.Settings.Auth.EnvKey); v == "" {
				// Codex's own words when a turn runs without it.
				st = readiness{reason: fmt.Sprintf("Missing environment variable: `%s`.", p.Settings.Auth.EnvKey)}
			}
			break
		}
		var acct struct {
			Account       json.RawMessage `json:"account"`
			RequiresLogin bool            `json:"requiresOpenaiAuth"`
		}
		if err := r.call(ctx, "account/read", map[string]any{}, &acct); err != nil {
			return "", err
		}
		if acct.RequiresLogin && (len(acct.Account) == 0 || string(acct.Account) == "null") {
			st = readiness{reason: "Not logged in · run codex login"}
		}
	}
	// The model codex runs when none is named: its config's, else its
	// catalog's default. A custom provider serves only what its config
	// names; the catalog is OpenAI's.
	var conf struct {
		Config struct {
			Model *string `json:"model"`
		} `json:"config"`
	}
	if err := r.call(ctx, "config/read", map[string]any{}, &conf); err == nil && conf.Config.Model != nil && *conf.Config.Model != "" {
		st.model = *conf.Config.Model
		if providers.Default != "openai" {
			st.models = []string{st.model}
		}
	}
	if len(st.models) == 0 {
		var list struct {
			Data []struct {
				Model     string `json:"model"`
				IsDefault bool   `json:"isDefault"`
				Hidden    bool   `json:"hidden"`
			} `json:"data"`
		}
		if err := r.call(ctx, "model/list", map[string]any{}, &list); err == nil {
			for _, m := range list.Data {
				if m.Hidden {
					continue
				}
				st.models = append(st.models, m.Model)
				if m.IsDefault && st.model == "" {
					st.model = m.Model
				}
			}
		}
	}
	s.got, s.ok = st, true
	return "", nil
}

func (s *codexProbe) notify(string, json.RawMessage) error { return nil }

func (s *codexProbe) request(context.Context, string, json.RawMessage) (any, *rpcError) {
	return nil, &rpcError{Code: rpcNoMethod, Message: "Conch was only asking whether Codex is ready"}
}

func (s *codexProbe) failure(exit exitStatus) error { return exit.failure("codex") }

// codexHello is the handshake.
func codexHello(ctx context.Context, r *rpcRun) error {
	if err := r.call(ctx, "initialize", map[string]any{"clientInfo": codexClient, "capabilities": nil}, nil); err != nil {
		return err
	}
	return r.notifyCLI("initialized", nil)
}

// codexSandboxes is the sandbox of each mode: writes stay in the folder.
var codexSandboxes = map[task.Mode]string{
	task.Plan:  "read-only",
	task.Ask:   "workspace-write",
	task.Edits: "workspace-write",
	task.Auto:  "workspace-write",
}

// Stream runs one turn of a codex app-server for req.
func (c *Codex) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	bin, sandbox, err := c.cfg.command(ctx, codexFloor, req, codexSandboxes)
	if err != nil {
		return nil, err
	}
	args := []string{"app-server"}
	var srv *askServer
	if len(req.Tools) > 0 && req.Call != nil {
		if srv, err = startAskServer(ctx, serveOpts{Tools: req.Tools, Call: req.Call, Cwd: req.Cwd}); err != nil {
			return nil, fmt.Errorf("codex: serve Conch's tools: %w", err)
		}
		// Conch's gate checks its own tools' calls, so codex need not ask.
		args = append(args,
			"-c", "mcp_servers.conch.url="+strconv.Quote(srv.url),
			"-c", `mcp_servers.conch.default_tools_approval_mode="approve"`)
	}
	s := newCodexSession(req)
	s.sandbox, s.model, s.srv = sandbox, c.cfg.model(req), srv
	ch, err := launchRPC(ctx, c.cfg.with(req.Env), "codex", bin, args, req.Cwd, req, func(e emitter) rpcSession {
		s.e = e
		return s
	})
	if err != nil && srv != nil {
		srv.Close()
	}
	return ch, err
}

// newCodexSession is the session of one turn of req, its maps made.
func newCodexSession(req provider.Request) *codexSession {
	return &codexSession{req: req, turnDone: make(chan codexTurn, 1), completedOne: make(chan struct{}, 1),
		items: map[string]codexItem{}, asked: map[string]string{}, allowed: map[string]bool{}, settled: map[string]bool{}}
}

// codexSession is one turn of one thread.
type codexSession struct {
	req     provider.Request
	sandbox string
	model   string
	srv     *askServer
	e       emitter

	turnDone     chan codexTurn
	completedOne chan struct{} // a token at each item/completed, for settle

	mu       sync.Mutex
	items    map[string]codexItem // started items by id, for their approvals
	order    []string             // their ids, in the order they started
	lastText string               // the agent message text came from last
	wrote    bool
	asked    map[string]string // what the gate was asked, by item
	allowed  map[string]bool   // the items the gate allowed, by id
	settled  map[string]bool   // the items settle showed as done, by id
}

// codexItem is a thread item, as item/started and item/completed give it.
type codexItem struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Command  string `json:"command"`
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode"`
	Changes  []struct {
		Path string `json:"path"`
		Kind struct {
			Type string `json:"type"`
		} `json:"kind"`
		// Diff is a new or deleted file's text, else the unified diff.
		Diff string `json:"diff"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Query  string `json:"query"`
}

// codexWrite is one file's change in a Codex patch: a new file's text, a
// deleted one's, or the lines an update takes out and puts in (each
// hunk's context kept, so the pieces read as the file does).
func codexWrite(path, kind, diff string) *provider.Write {
	switch kind {
	case "add":
		return &provider.Write{Path: path, New: diff, Whole: true}
	case "delete":
		return &provider.Write{Path: path, Old: diff}
	case "update":
		var old, next strings.Builder
		hunk := false // past the first @@: "---" is a line taken out, not a header
		for _, line := range strings.SplitAfter(diff, "\n") {
			switch {
			case line == "", !hunk && (strings.HasPrefix(line, "---") || strings.HasPrefix(line, "+++")):
			case strings.HasPrefix(line, "@@"):
				if hunk {
					old.WriteString("…\n")
					next.WriteString("…\n")
				}
				hunk = true
			case strings.HasPrefix(line, "-"):
				old.WriteString(line[1:])
			case strings.HasPrefix(line, "+"):
				next.WriteString(line[1:])
			case strings.HasPrefix(line, " "):
				old.WriteString(line[1:])
				next.WriteString(line[1:])
			case strings.HasPrefix(line, `\`):
				// "\ No newline at end of file"
			default:
				old.WriteString(line)
				next.WriteString(line)
			}
		}
		return &provider.Write{Path: path, Old: old.String(), New: next.String()}
	}
	return nil
}

// codexTurn is a finished turn.
type codexTurn struct {
	Status string     `json:"status"`
	Error  *codexFail `json:"error"`
}

type codexFail struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails string          `json:"additionalDetails"`
}

func (s *codexSession) drive(ctx context.Context, r *rpcRun) (string, error) {
	if s.srv != nil {
		defer s.srv.Close()
	}
	if err := codexHello(ctx, r); err != nil {
		return "", err
	}
	params := map[string]any{
		"approvalPolicy": "untrusted",
		"sandbox":        s.sandbox,
		"ephemeral":      true,
	}
	if s.req.Cwd != "" {
		params["cwd"] = s.req.Cwd
	}
	if s.model != "" {
		params["model"] = s.model
	}
	if sys := strings.TrimSpace(s.req.System); sys != "" {
		params["developerInstructions"] = sys
	}
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := r.call(ctx, "thread/start", params, &started); err != nil {
		return "", codexCallError(err)
	}
	text := prompt(provider.Request{Messages: s.req.Messages})
	input := []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}
	if err := r.call(ctx, "turn/start", map[string]any{"threadId": started.Thread.ID, "input": input}, nil); err != nil {
		return "", codexCallError(err)
	}
	var turn codexTurn
	select {
	case turn = <-s.turnDone:
	case <-ctx.Done():
		if r.p.isExited() {
			return "", errExited
		}
		return "", context.Cause(ctx)
	}
	s.settle(ctx, settleWait)
	switch turn.Status {
	case "completed":
		return "end_turn", nil
	case "interrupted":
		return "", errors.New("codex: the turn was interrupted")
	}
	if turn.Error == nil {
		return "", fmt.Errorf("codex: the turn ended %s", orDefault(turn.Status, "without a status"))
	}
	return "", codexError(turn.Error.Message, turn.Error.CodexErrorInfo)
}

// codexCallError words a refused thread/start or turn/start.
func codexCallError(err error) error {
	var ce *rpcCallError
	if errors.As(err, &ce) {
		return codexError(ce.Message, nil)
	}
	return err
}

func (s *codexSession) notify(method string, params json.RawMessage) error {
	switch method {
	case "item/agentMessage/delta":
		var p struct {
			ItemID string `json:"itemId"`
			Delta  string `json:"delta"`
		}
		if json.Unmarshal(params, &p) != nil || p.Delta == "" {
			return nil
		}
		s.mu.Lock()
		text := p.Delta
		// The messages of one reply do not run together.
		if p.ItemID != s.lastText && s.wrote {
			text = "\n\n" + text
		}
		s.lastText, s.wrote = p.ItemID, true
		s.mu.Unlock()
		s.e.text(text)
	case "item/started":
		var p struct {
			Item codexItem `json:"item"`
		}
		if json.Unmarshal(params, &p) == nil && p.Item.ID != "" {
			s.mu.Lock()
			if _, seen := s.items[p.Item.ID]; !seen {
				s.order = append(s.order, p.Item.ID)
			}
			s.items[p.Item.ID] = p.Item
			s.mu.Unlock()
		}
	case "item/completed":
		var p struct {
			Item codexItem `json:"item"`
		}
		if json.Unmarshal(params, &p) == nil {
			s.mu.Lock()
			shown := s.settled[p.Item.ID]
			delete(s.items, p.Item.ID)
			s.mu.Unlock()
			if !shown {
				s.e.step(s.completed(p.Item))
			}
			select {
			case s.completedOne <- struct{}{}:
			default:
			}
		}
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage struct {
				Total struct {
					Input  int `json:"inputTokens"`
					Cached int `json:"cachedInputTokens"`
					Output int `json:"outputTokens"`
				} `json:"total"`
			} `json:"tokenUsage"`
		}
		if json.Unmarshal(params, &p) == nil {
			t := p.TokenUsage.Total
			// OpenAI counts cached input within the input.
			s.e.usage(provider.Usage{InputTokens: max(t.Input-t.Cached, 0), CacheReadTokens: t.Cached, OutputTokens: t.Output})
		}
	case "error":
		var p struct {
			Error     codexFail `json:"error"`
			WillRetry bool      `json:"willRetry"`
		}
		if json.Unmarshal(params, &p) == nil && p.WillRetry {
			s.e.notice(codexRetry(p.Error))
		}
	case "turn/completed":
		var p struct {
			Turn codexTurn `json:"turn"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return fmt.Errorf("%w: codex turn/completed: %v", provider.ErrProtocol, err)
		}
		select {
		case s.turnDone <- p.Turn:
		default:
		}
	}
	return nil
}

// settleWait is how long a turn's end waits for the items it left open.
const settleWait = 2 * time.Second

// settle waits, up to wait, for the items the gate allowed to complete,
// then shows those still open as done. Codex 0.142 now and then says a
// turn completed before it says a command it ran did (seen under load),
// and a turn's end used to stop listening there: the person saw no trace
// of a command it was allowed to run. An item completed after settle is
// not shown twice.
func (s *codexSession) settle(ctx context.Context, wait time.Duration) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for waiting := true; waiting && len(s.openAllowed(false)) > 0; {
		select {
		case <-s.completedOne:
		case <-timer.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	for _, it := range s.openAllowed(true) {
		s.e.step(s.completed(it))
	}
}

// openAllowed are the commands and edits the gate allowed that have not
// completed, in the order they started; take also closes them.
func (s *codexSession) openAllowed(take bool) []codexItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	var open []codexItem
	for _, id := range s.order {
		if it, ok := s.items[id]; ok && s.allowed[id] && (it.Type == "commandExecution" || it.Type == "fileChange") {
			open = append(open, it)
			if take {
				delete(s.items, id)
				s.settled[id] = true
			}
		}
	}
	return open
}

// completed is the step a finished item shows, "" for none.
func (s *codexSession) completed(it codexItem) string {
	switch it.Type {
	case "commandExecution":
		cmd := shorten(unwrapShell(it.Command))
		switch {
		case it.Status == "declined":
			return s.declined(it.ID, "Run `"+cmd+"`?")
		case it.ExitCode != nil && *it.ExitCode != 0:
			return fmt.Sprintf("Ran %s (exit %d)", cmd, *it.ExitCode)
		}
		return "Ran " + cmd
	case "fileChange":
		if it.Status == "declined" {
			return s.declined(it.ID, "Edit "+s.paths(it)+"?")
		}
		return "Edited " + s.paths(it)
	case "webSearch":
		return "Searched the web for " + shorten(it.Query)
	case "mcpToolCall":
		if it.Server == "conch" {
			return "" // Conch's own tools show as their calls
		}
		return "Used " + it.Server + "." + it.Tool
	}
	return ""
}

// declined is the step of an item the gate said no to, in the words it
// was asked in.
func (s *codexSession) declined(id, fallback string) string {
	s.mu.Lock()
	detail, ok := s.asked[id]
	s.mu.Unlock()
	if !ok {
		detail = fallback
	}
	return declinedStep(detail)
}

func (s *codexSession) paths(it codexItem) string {
	var paths []string
	for _, ch := range it.Changes {
		paths = append(paths, relPath(s.req.Cwd, ch.Path))
	}
	return shorten(strings.Join(paths, ", "))
}

// request answers codex's approval requests through Conch's gate.
func (s *codexSession) request(ctx context.Context, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "item/commandExecution/requestApproval":
		var p struct {
			ItemID  string `json:"itemId"`
			Command string `json:"command"`
			Cwd     string `json:"cwd"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
		}
		cmd := unwrapShell(p.Command)
		detail := fmt.Sprintf("Run `%s` in %s?", cmd, tilde(orDefault(p.Cwd, s.req.Cwd)))
		if p.Reason != "" {
			detail = fmt.Sprintf("Run `%s` in %s (%s)?", cmd, tilde(orDefault(p.Cwd, s.req.Cwd)), p.Reason)
		}
		return map[string]any{"decision": s.decide(ctx, p.ItemID, provider.Action{Tool: "exec_command", Detail: detail, Effect: "command", Command: cmd})}, nil
	case "item/fileChange/requestApproval":
		var p struct {
			ItemID string `json:"itemId"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
		}
		s.mu.Lock()
		it := s.items[p.ItemID]
		s.mu.Unlock()
		a := provider.Action{Tool: "apply_patch", Detail: "Edit " + s.paths(it) + "?", Effect: "edit"}
		for _, ch := range it.Changes {
			a.Paths = append(a.Paths, ch.Path)
			if a.Write == nil {
				a.Write = codexWrite(relPath(s.req.Cwd, ch.Path), ch.Kind.Type, ch.Diff)
			}
		}
		if len(a.Paths) == 0 {
			// A change Conch cannot see cannot be checked against the folder.
			return map[string]any{"decision": "decline"}, nil
		}
		return map[string]any{"decision": s.decide(ctx, p.ItemID, a)}, nil
	case "mcpServer/elicitation/request":
		var p struct {
			ServerName string `json:"serverName"`
			Message    string `json:"message"`
			Meta       struct {
				Tool string `json:"tool_name"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()}
		}
		a := provider.Action{Tool: p.ServerName + "." + p.Meta.Tool, Detail: orDefault(p.Message, "Allow "+p.ServerName+"?"), Effect: "network"}
		if s.decide(ctx, "", a) == "accept" {
			return map[string]any{"action": "accept", "content": map[string]any{}, "_meta": nil}, nil
		}
		return map[string]any{"action": "decline", "content": nil, "_meta": nil}, nil
	}
	return nil, &rpcError{Code: rpcNoMethod, Message: "Conch does not answer " + method}
}

// decide puts item's step to Conch's gate: accept, decline, or cancel when
// the run is being stopped.
func (s *codexSession) decide(ctx context.Context, item string, a provider.Action) string {
	if item != "" {
		s.mu.Lock()
		s.asked[item] = a.Detail
		s.mu.Unlock()
	}
	if s.req.Ask == nil {
		return "decline"
	}
	ok, err := s.req.Ask(ctx, a)
	switch {
	case err != nil:
		return "cancel"
	case ok:
		if item != "" {
			s.mu.Lock()
			s.allowed[item] = true
			s.mu.Unlock()
		}
		return "accept"
	}
	return "decline"
}

func (s *codexSession) failure(exit exitStatus) error { return exit.failure("codex") }

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

// unwrapShell shows `bash -lc 'go test ./...'` as `go test ./...`.
func unwrapShell(cmd string) string {
	for _, prefix := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/zsh -lc ", "zsh -lc ", "/bin/sh -c ", "sh -c "} {
		if rest, ok := strings.CutPrefix(cmd, prefix); ok {
			if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
				rest = rest[1 : len(rest)-1]
			}
			return rest
		}
	}
	return cmd
}
