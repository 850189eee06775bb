package agentcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
