package agentcli

import (
	"context"
	"fmt"
	"strconv"

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
	srv, err := toolServer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("codex: serve Conch's tools: %w", err)
	}
	if srv != nil {
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
	if err != nil {
		srv.Close()
	}
	return ch, err
}
