package agentcli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
	if err != nil {
		srv.Close()
	}
	return ch, err
}
