package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"conch/backend/provider"
	"conch/backend/task"
)

// Codex is OpenAI's Codex CLI run as `codex exec --json`. exec never asks,
// so it cannot route questions to Conch and runs only in plan (read-only
// sandbox) or auto (workspace-write sandbox) mode.
type Codex struct {
	cfg Config
}

// NewCodex returns the Codex provider for cfg.
func NewCodex(cfg Config) *Codex { return &Codex{cfg: cfg} }

// Info reports whether codex is on PATH and logged in (`codex login
// status` exits 1 when not).
func (c *Codex) Info(ctx context.Context) provider.Info {
	info := provider.Info{
		ID:       c.cfg.ID,
		Name:     orDefault(c.cfg.Name, "Codex"),
		Kind:     "codex",
		Category: provider.CodingAgent,
		Models:   models(c.cfg.Model, "gpt-5-codex", "gpt-5-codex-mini", "gpt-5-codex", "gpt-5-codex-mini", "gpt-5"),
	}
	bin, err := c.cfg.lookPath("codex")
	if err != nil {
		info.Reason = notFound("codex", "Codex")
		return info
	}
	// Exit 1 is "Not logged in"; an older codex without the subcommand
	// exits 2, which says nothing about logging in.
	if code, out, ok := probe(ctx, c.cfg, bin, "login", "status"); ok && code == 1 {
		info.Reason = firstLine(out, "Not logged in · run codex login")
		return info
	}
	info.Ready = true
	return info
}

// Stream runs `codex exec --json` for req with the prompt as the last
// argument.
func (c *Codex) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	var sandbox string
	switch m := mode(req); m {
	case task.Plan:
		sandbox = "read-only"
	case task.Auto:
		sandbox = "workspace-write"
	default:
		return nil, fmt.Errorf("codex in %s mode: %w", m, ErrNeedsAsk)
	}
	bin, err := c.cfg.lookPath("codex")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", provider.ErrNotReady, notFound("codex", "Codex"))
	}
	args := []string{"exec", "--json"}
	if m := c.cfg.model(req); m != "" {
		args = append(args, "-m", m)
	}
	if req.Cwd != "" {
		args = append(args, "-C", req.Cwd)
	}
	args = append(args, "--skip-git-repo-check", "-s", sandbox)
	text := prompt(req)
	var input []byte
	// codex reads the prompt from stdin when it is "-".
	if len(text) > argMax || strings.HasPrefix(text, "-") {
		input = []byte(text)
		text = "-"
	}
	args = append(args, text)
	return launch(ctx, c.cfg, "codex", bin, args, req.Cwd, req.Mark, input, func(p *proc, e emitter) handler {
		return &codexHandler{e: e, cwd: req.Cwd}
	})
}

// codexHandler maps codex exec's JSON lines to events.
type codexHandler struct {
	e     emitter
	cwd   string
	wrote bool
	done  bool
	// failed is the turn's error; codex may send a top-level error and
	// then turn.failed with the same words, or errors it recovers from
	// ("Reconnecting… 2/5") before the turn completes.
	failed string
}

type codexLine struct {
	Type string `json:"type"`
	Item struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Command string `json:"command"`
		Status  string `json:"status"`
		Changes []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
		Query  string `json:"query"`
		Server string `json:"server"`
		Tool   string `json:"tool"`
	} `json:"item"`
	Usage struct {
		Input       int `json:"input_tokens"`
		CachedInput int `json:"cached_input_tokens"`
		Output      int `json:"output_tokens"`
	} `json:"usage"`
	Message string `json:"message"`
	Error   struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (h *codexHandler) line(raw []byte) error {
	var l codexLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("%w: codex: %v", provider.ErrProtocol, err)
	}
	switch l.Type {
	case "item.completed":
		it := l.Item
		switch it.Type {
		case "agent_message":
			if it.Text == "" {
				break
			}
			text := it.Text
			if h.wrote {
				text = "\n\n" + text
			}
			h.wrote = true
			h.e.text(text)
		case "command_execution":
			if it.Status == "declined" {
				h.e.step("Was not allowed to run " + shorten(unwrapShell(it.Command)))
				break
			}
			h.e.step("Ran " + shorten(unwrapShell(it.Command)))
		case "file_change":
			var paths []string
			for _, ch := range it.Changes {
				paths = append(paths, relPath(h.cwd, ch.Path))
			}
			h.e.step("Edited " + shorten(strings.Join(paths, ", ")))
		case "web_search":
			h.e.step("Searched the web for " + shorten(it.Query))
		case "mcp_tool_call":
			h.e.step("Used " + it.Server + "." + it.Tool)
		}
	case "turn.completed":
		h.done = true
		h.e.usage(provider.Usage{
			InputTokens:     l.Usage.Input,
			OutputTokens:    l.Usage.Output,
			CacheReadTokens: l.Usage.CachedInput,
		})
	case "turn.failed":
		h.fail(l.Error.Message)
	case "error":
		h.fail(l.Message)
	}
	return nil
}

// fail keeps the turn's error: the latest, unless an earlier one was a
// limit, which is what the person most needs to know.
func (h *codexHandler) fail(msg string) {
	if msg != "" && (h.failed == "" || isCodexLimit(msg) || !isCodexLimit(h.failed)) {
		h.failed = msg
	}
}

func (h *codexHandler) finish(exit exitStatus) provider.Event {
	if h.done {
		return provider.Event{Kind: provider.DoneEvent, StopReason: "end_turn"}
	}
	if h.failed != "" {
		return provider.Event{Kind: provider.ErrorEvent, Err: codexError(h.failed)}
	}
	if exit.code != 0 {
		return provider.Event{Kind: provider.ErrorEvent, Err: exit.failure("codex")}
	}
	return provider.Event{Kind: provider.ErrorEvent, Err: fmt.Errorf("%w: codex exited without finishing its turn", provider.ErrProtocol)}
}

func isCodexLimit(msg string) bool {
	lower := strings.ToLower(msg)
	return strings.Contains(lower, "usage limit") || strings.Contains(lower, "quota exceeded")
}

// codexError turns codex's failure message into the error callers test for.
func codexError(msg string) error {
	lower := strings.ToLower(msg)
	switch {
	case isCodexLimit(msg):
		return &provider.LimitError{Until: codexUntil(msg), Message: msg}
	case strings.Contains(lower, "not logged in") || strings.Contains(lower, "401 unauthorized") || strings.Contains(lower, "codex login"):
		return fmt.Errorf("%w: %s", provider.ErrAuth, msg)
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
