package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"conch/backend/provider"
	"conch/backend/task"
)

// Gemini CLI exit codes (packages/core/src/utils/exitCodes.ts).
const (
	geminiExitAuth      = 41
	geminiExitInput     = 42
	geminiExitTurnLimit = 53
	geminiExitCancelled = 130
)

// geminiNoAuth is the reason given when no sign-in can be found.
const geminiNoAuth = "Gemini CLI has no auth method set: run gemini once to sign in, or set GEMINI_API_KEY"

// Gemini is Google's Gemini CLI run as `gemini -p` with stream-json
// output. In -p its asks are denied, so it runs only in plan or auto
// (yolo) mode.
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
		Models:   models(g.cfg.Model, "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"),
	}
	if _, err := g.cfg.lookPath("gemini"); err != nil {
		info.Reason = notFound("gemini", "Gemini CLI")
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

// geminiModes maps the modes Gemini CLI can run in to --approval-mode.
var geminiModes = map[task.Mode]string{task.Plan: "plan", task.Auto: "yolo"}

// Stream runs `gemini -p <prompt> --output-format stream-json` for req.
func (g *Gemini) Stream(ctx context.Context, req provider.Request) (<-chan provider.Event, error) {
	m := mode(req)
	approval, ok := geminiModes[m]
	if !ok {
		return nil, fmt.Errorf("gemini in %s mode: %w", m, ErrNeedsAsk)
	}
	bin, err := g.cfg.lookPath("gemini")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", provider.ErrNotReady, notFound("gemini", "Gemini CLI"))
	}
	// gemini appends -p to what it reads on stdin: a prompt too long for
	// one argument goes there, with a line after it that points back.
	text := prompt(req)
	var input []byte
	if len(text) > argMax {
		input, text = []byte(text), "Reply to the conversation above."
	} else if strings.HasPrefix(text, "-") {
		text = " " + text // not to be read as a flag
	}
	args := []string{"-p", text, "--output-format", "stream-json"}
	if model := g.cfg.model(req); model != "" {
		args = append(args, "-m", model)
	}
	args = append(args, "--approval-mode", approval)
	return launch(ctx, g.cfg, "gemini", bin, args, req.Cwd, req.Mark, input, func(p *proc, e emitter) handler {
		return &geminiHandler{e: e, cwd: req.Cwd}
	})
}

// geminiHandler maps Gemini CLI's stream-json lines to events.
type geminiHandler struct {
	e      emitter
	cwd    string
	done   bool
	failed string // the last error-severity message
}

type geminiLine struct {
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name"`
	Parameters json.RawMessage `json:"parameters"`
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Status     string          `json:"status"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats struct {
		Input  int `json:"input_tokens"`
		Output int `json:"output_tokens"`
		Cached int `json:"cached"`
	} `json:"stats"`
}

func (h *geminiHandler) line(raw []byte) error {
	var l geminiLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return fmt.Errorf("%w: gemini: %v", provider.ErrProtocol, err)
	}
	switch l.Type {
	case "message":
		if l.Role == "assistant" {
			h.e.text(l.Content)
		}
	case "tool_use":
		h.e.step(geminiStep(l.ToolName, l.Parameters, h.cwd))
	case "error":
		if l.Severity == "error" || l.Severity == "" {
			h.failed = l.Message
		}
	case "result":
		h.e.usage(provider.Usage{InputTokens: l.Stats.Input, OutputTokens: l.Stats.Output, CacheReadTokens: l.Stats.Cached})
		if l.Status == "success" || (l.Status == "" && l.Error == nil) {
			h.done = true
		} else if l.Error != nil && l.Error.Message != "" {
			h.failed = l.Error.Message
		} else if h.failed == "" {
			h.failed = "the turn ended with status " + l.Status
		}
	}
	return nil
}

func (h *geminiHandler) finish(exit exitStatus) provider.Event {
	fail := func(err error) provider.Event { return provider.Event{Kind: provider.ErrorEvent, Err: err} }
	msg := orDefault(h.failed, exit.stderr)
	switch exit.code {
	case geminiExitAuth:
		return fail(fmt.Errorf("%w: %s", provider.ErrAuth, orDefault(msg, geminiNoAuth)))
	case geminiExitTurnLimit:
		return fail(errors.New("gemini stopped: it reached its turn limit"))
	case geminiExitCancelled:
		return fail(errors.New("gemini was cancelled"))
	}
	if h.done && exit.code == 0 {
		return provider.Event{Kind: provider.DoneEvent, StopReason: "end_turn"}
	}
	if isGeminiLimit(msg) {
		return fail(&provider.LimitError{Message: geminiLimitText(msg)})
	}
	if h.failed != "" {
		if exit.code == geminiExitInput {
			return fail(errors.New("gemini refused the input: " + h.failed))
		}
		return fail(errors.New("gemini: " + h.failed))
	}
	if exit.code != 0 {
		return fail(exit.failure("gemini"))
	}
	return fail(fmt.Errorf("%w: gemini exited without a result", provider.ErrProtocol))
}

func isGeminiLimit(msg string) bool {
	lower := strings.ToLower(msg)
	return strings.Contains(msg, "TerminalQuotaError") || strings.Contains(lower, "exhausted your daily quota") ||
		strings.Contains(lower, "quota exceeded")
}

// geminiLimitText keeps the sentence after "[API Error: " when there.
func geminiLimitText(msg string) string {
	if _, rest, ok := strings.Cut(msg, "[API Error: "); ok {
		return strings.TrimSuffix(strings.TrimSpace(rest), "]")
	}
	return msg
}

// geminiStep says what a tool_use did, in the past tense.
func geminiStep(name string, raw json.RawMessage, cwd string) string {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	path := func() string {
		for _, k := range []string{"file_path", "absolute_path", "path", "dir_path"} {
			if p := str(in, k); p != "" {
				return shorten(relPath(cwd, p))
			}
		}
		return "."
	}
	switch name {
	case "read_file":
		return "Read " + path()
	case "read_many_files":
		return "Read several files"
	case "run_shell_command":
		return "Ran " + shorten(str(in, "command"))
	case "replace", "edit":
		return "Edited " + path()
	case "write_file":
		return "Wrote " + path()
	case "search_file_content", "grep":
		return "Searched for " + shorten(str(in, "pattern"))
	case "glob":
		return "Listed files matching " + shorten(str(in, "pattern"))
	case "list_directory":
		return "Listed " + path()
	case "google_web_search":
		return "Searched the web for " + shorten(str(in, "query"))
	case "web_fetch":
		return "Fetched " + shorten(str(in, "prompt"))
	case "save_memory":
		return "Saved a memory"
	case "write_todos":
		return "Updated the to-do list"
	}
	return "Used " + name
}
