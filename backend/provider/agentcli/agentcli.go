// Package agentcli runs coding-agent CLIs (Claude Code, Codex, Gemini CLI)
// as providers: one process per request, started in the request's folder,
// its whole tree (tools in sessions of their own too) marked and stopped
// as one (see proctree). What each CLI speaks is in docs/agents:
//
//   - Claude Code: `claude -p` with stream-json lines on stdout.
//   - Codex: `codex app-server`, JSON-RPC on stdio (see rpc.go).
//   - Gemini CLI: `gemini --acp`, the Agent Client Protocol: JSON-RPC on
//     stdio.
//
// Conch is each CLI's permission authority in every mode: every step the
// CLI would ask about comes to Request.Ask (Claude Code's through the MCP
// permission tool Conch serves it, the others' as JSON-RPC requests), and
// Conch's gate answers. Conch's own tools (Request.Tools) reach every CLI
// over the same loopback MCP server, run through Request.Call.
//
// Reading output lines: every line is one JSON object. An empty line, or a
// line that does not start with '{', is noise (a CLI's warning printed to
// stdout) and is skipped; a line that starts with '{' but is not valid
// JSON ends the stream with provider.ErrProtocol. Unknown types are
// ignored. Lines may be of any length.
//
// The transcript: the CLIs take one prompt, so a conversation of several
// turns is sent as one user message, the earlier turns first as context
// text (see prompt), the last user message after them. The system prompt,
// when there is one, leads that text (Codex takes it as developer
// instructions instead).
//
// The files, by job: proc.go starts a CLI and reads its lines, rpc.go
// drives one over JSON-RPC, mcp.go and mcp_tools.go serve a run Conch's
// tools (and Claude Code's questions). Each CLI's own files start with
// its name: the provider (claude.go, codex.go, gemini.go), then its
// stream or session, its steps and approvals, and its errors.
package agentcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"conch/backend/provider"
	"conch/backend/task"
)

// The CLIs are providers.
var (
	_ provider.Provider = (*Claude)(nil)
	_ provider.Provider = (*Codex)(nil)
	_ provider.Provider = (*Gemini)(nil)
)

// StopGrace is how long a stopped tree has between SIGTERM and SIGKILL:
// a stop ends everything within two seconds (SPEC §3 Processes).
const StopGrace = 1500 * time.Millisecond

// ErrNeedsAsk is returned by Stream for a mode that needs asking (ask,
// edits) on a CLI that cannot route its questions to Conch.
var ErrNeedsAsk = errors.New("this CLI cannot ask before a side effect, so it runs only in plan or auto mode")

// Config is one configured CLI provider.
type Config struct {
	// ID and Name identify the provider in Conch.
	ID   string
	Name string
	// Binary is the CLI's path, or a name looked up on PATH; empty uses
	// the CLI's usual name (claude, codex, gemini).
	Binary string
	// Env holds extra KEY=VALUE pairs added to Conch's environment.
	Env []string
	// Model is the default model; empty leaves the choice to the CLI.
	Model string
	// Grace overrides StopGrace (tests).
	Grace time.Duration
	// Oldest overrides the oldest version of the CLI Conch works with
	// (tests: a floor above the installed CLI).
	Oldest string
}

// lookPath finds the binary, honouring a PATH given in Env.
func (c Config) lookPath(name string) (string, error) {
	bin := c.Binary
	if bin == "" {
		bin = name
	}
	if strings.ContainsRune(bin, filepath.Separator) {
		if _, err := os.Stat(bin); err != nil {
			return "", err
		}
		return bin, nil
	}
	if path, ok := c.getenv("PATH"); ok {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				dir = "."
			}
			full := filepath.Join(dir, bin)
			if st, err := os.Stat(full); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return full, nil
			}
		}
		return "", exec.ErrNotFound
	}
	return exec.LookPath(bin)
}

// getenv reads a variable from Env, or else from Conch's environment.
func (c Config) getenv(key string) (string, bool) {
	for i := len(c.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.Env[i], "="); ok && k == key {
			return v, true
		}
	}
	return os.LookupEnv(key)
}

func (c Config) environ() []string { return append(os.Environ(), c.Env...) }

// with is c with env added to Env (a request's own variables).
func (c Config) with(env []string) Config {
	c.Env = append(append([]string(nil), c.Env...), env...)
	return c
}

func (c Config) grace() time.Duration {
	if c.Grace > 0 {
		return c.Grace
	}
	return StopGrace
}

// model picks the request's model, else the configured one.
func (c Config) model(req provider.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.Model
}

// installed finds f's CLI for Info: its path, or ok false with info's
// Reason saying why it cannot be used (not found, or older than f). The
// version found is set in info.
func (c Config) installed(ctx context.Context, f cliFloor, info *provider.Info) (bin string, ok bool) {
	bin, err := c.lookPath(f.command)
	if err != nil {
		info.Reason = notFound(f.command, f.product)
		return "", false
	}
	info.Version = cliVersion(ctx, c, bin, f.pkg)
	if info.Reason = f.tooOld(info.Version, c.Oldest); info.Reason != "" {
		return "", false
	}
	return bin, true
}

// command finds f's CLI for a Stream of req: the path, and what flags
// names req's mode as (the CLI's word for it, or its sandbox). Errors
// come before anything starts: an unknown mode, a missing CLI, or ctx
// already done.
func (c Config) command(ctx context.Context, f cliFloor, req provider.Request, flags map[task.Mode]string) (bin, flag string, err error) {
	flag, ok := flags[mode(req)]
	if !ok {
		return "", "", fmt.Errorf("%s: unknown mode %q", f.command, req.Mode)
	}
	if bin, err = c.lookPath(f.command); err != nil {
		return "", "", fmt.Errorf("%w: %s", provider.ErrNotReady, notFound(f.command, f.product))
	}
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	return bin, flag, nil
}

// notFound is the reason a missing binary gives.
func notFound(bin, product string) string {
	return fmt.Sprintf("%s was not found on PATH; install %s", bin, product)
}

// mode returns the request's mode, plan when none is set.
func mode(req provider.Request) task.Mode {
	if req.Mode == "" {
		return task.Plan
	}
	return req.Mode
}

// orDefault is s, or fallback when s is empty.
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
