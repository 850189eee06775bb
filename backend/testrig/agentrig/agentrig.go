// Package agentrig sets up the real coding-agent CLIs for a test: the
// pinned binary (agentbin), a scripted model server on loopback in the
// CLI's wire format (modelserver), and an environment of the test's own,
// so nothing of the person's (logins, config, history) is read or written
// and nothing but loopback can be reached: every proxy variable points at
// a closed port, so a CLI that tried the internet would fail instead.
package agentrig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/anthropic"
	"conch/backend/testrig/modelserver/gemini"
	"conch/backend/testrig/modelserver/responses"
)

// Rig is one CLI set up for a test.
type Rig struct {
	// Bin is the CLI's command.
	Bin string
	// Env is what to add to the environment it runs in.
	Env []string
}

// Isolated is the environment of a real CLI's test: a fresh HOME and
// TMPDIR, no way out but loopback, plus extra (later entries win).
func Isolated(t testing.TB, extra ...string) []string {
	t.Helper()
	env, err := isolated(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return append(env, extra...)
}

// isolated lays out a HOME and TMPDIR under root and returns the
// environment that uses them, with every proxy variable at a closed port.
func isolated(root string) ([]string, error) {
	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	env := []string{"HOME=" + home, "TMPDIR=" + tmp, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, k+"=http://127.0.0.1:9")
	}
	return env, nil
}

// CodexKey is the variable Codex's test provider reads its key from.
const CodexKey = "CONCH_TEST_KEY"

// NoRetries are Codex provider settings that turn its retries off.
const NoRetries = "request_max_retries = 0\nstream_max_retries = 0\n"

// Codex is the real Codex CLI with a CODEX_HOME whose provider is a
// scripted Responses server answering with brain; retries are the
// provider's retry options ("" for NoRetries).
func Codex(t testing.TB, brain modelserver.Brain, retries string) (Rig, *responses.Server) {
	t.Helper()
	return CodexAt(t, agentbin.Newest, brain, retries)
}

// CodexAt is Codex with the CLI of the install.
func CodexAt(t testing.TB, in agentbin.Install, brain modelserver.Brain, retries string) (Rig, *responses.Server) {
	t.Helper()
	bin := agentbin.PathOf(t, in, agentbin.Codex)
	srv := responses.New(t, brain)
	home := t.TempDir()
	if err := codexHome(home, srv, retries); err != nil {
		t.Fatal(err)
	}
	return Rig{Bin: bin, Env: Isolated(t, codexEnv(home)...)}, srv
}

// codexHome writes a CODEX_HOME whose provider is srv.
func codexHome(home string, srv *responses.Server, retries string) error {
	if retries == "" {
		retries = NoRetries
	}
	return os.WriteFile(filepath.Join(home, "config.toml"), []byte(responses.CodexConfig(srv.BaseURL(), CodexKey, retries)), 0o644)
}

func codexEnv(home string) []string {
	return []string{"CODEX_HOME=" + home, CodexKey + "=sk-conch-test"}
}

// Claude is the real Claude Code CLI talking to a scripted Anthropic
// Messages server answering with brain; it retries a failed call retries
// times (CLAUDE_CODE_MAX_RETRIES). Only the model server is reached:
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC stops everything else.
func Claude(t testing.TB, brain modelserver.Brain, retries int) (Rig, *anthropic.Server) {
	t.Helper()
	return ClaudeAt(t, agentbin.Newest, brain, retries)
}

// ClaudeAt is Claude with the CLI of the install.
func ClaudeAt(t testing.TB, in agentbin.Install, brain modelserver.Brain, retries int) (Rig, *anthropic.Server) {
	t.Helper()
	bin := agentbin.PathOf(t, in, agentbin.Claude)
	srv := anthropic.New(t, brain)
	return Rig{Bin: bin, Env: Isolated(t, claudeEnv(srv, retries)...)}, srv
}

func claudeEnv(srv *anthropic.Server, retries int) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + srv.URL,
		"ANTHROPIC_API_KEY=sk-ant-conch-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=" + strconv.Itoa(retries),
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		"TERM=dumb",
	}
}

// Gemini is the real Gemini CLI talking to a scripted Gemini API server
// answering with brain; it tries each model call attempts times in all
// (general.maxAttempts). Its settings turn off usage statistics and
// updates, so only the model server is reached.
func Gemini(t testing.TB, brain modelserver.Brain, attempts int) (Rig, *gemini.Server) {
	t.Helper()
	return GeminiAt(t, agentbin.Newest, brain, attempts)
}

// GeminiAt is Gemini with the CLI of the install.
func GeminiAt(t testing.TB, in agentbin.Install, brain modelserver.Brain, attempts int) (Rig, *gemini.Server) {
	t.Helper()
	bin := agentbin.PathOf(t, in, agentbin.Gemini)
	srv := gemini.New(t, brain)
	home := t.TempDir()
	if err := geminiHome(home, attempts); err != nil {
		t.Fatal(err)
	}
	return Rig{Bin: bin, Env: Isolated(t, append([]string{"HOME=" + home}, geminiEnv(home, srv)...)...)}, srv
}

// geminiHome writes home/.gemini/settings.json.
func geminiHome(home string, attempts int) error {
	b, err := json.Marshal(map[string]any{
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": attempts},
		"ide":       map[string]any{"enabled": false},
		"ui":        map[string]any{"hideTips": true, "hideBanner": true},
		"context":   map[string]any{"includeDirectoryTree": false},
		// As after a person's first run with an API key: `gemini -p`
		// refuses to start without an auth method chosen.
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o644)
}

func geminiEnv(home string, srv *gemini.Server) []string {
	return []string{"GEMINI_CLI_HOME=" + home, "GEMINI_API_KEY=conch-test-key",
		"GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GEMINI_TELEMETRY_ENABLED=false", "TERM=dumb"}
}

// Agent is one of the CLIs, for tests that run each in turn.
type Agent struct {
	// ID and Name are the provider's in Conch; Kind is the CLI's command.
	ID, Name, Kind string
	// Install is which of its versions runs (see agentbin).
	Install agentbin.Install
	// Model is the model to configure ("" leaves the CLI's).
	Model string
	// Start sets the CLI up against a server answering with brain, and
	// says how many model requests it has had so far.
	Start func(t testing.TB, brain modelserver.Brain) (rig Rig, requests func() int)
	// Write is the model's call that writes text and a newline to name.
	Write func(name, text string) modelserver.Call
	// Edit is the model's call that replaces the line old of name with new.
	Edit func(name, old, new string) modelserver.Call
	// Run is the model's call of its shell tool running command.
	Run func(command string) modelserver.Call
	// Limit is the model server's answer at a per-minute rate limit.
	Limit modelserver.Reply
	// Conch are the model's calls, in turn, of Conch's tool name with
	// args (over MCP): Codex's model must find it with tool_search first.
	Conch func(name string, args any) []modelserver.Call
}

func call(id, name string, args any) modelserver.Call {
	b, _ := json.Marshal(args)
	return modelserver.Call{ID: id, Name: name, Args: b}
}

// Agents are the three CLIs at their newest, each with its retries
// turned off.
var Agents = AgentsAt(agentbin.Newest)

// AgentsAt are the three CLIs of the install, each with its retries
// turned off.
func AgentsAt(in agentbin.Install) []Agent {
	return []Agent{{
		ID: "claude", Name: "Claude Code", Kind: agentbin.Claude, Install: in,
		Start: func(t testing.TB, brain modelserver.Brain) (Rig, func() int) {
			rig, srv := ClaudeAt(t, in, brain, 0)
			return rig, func() int { return len(srv.Turns()) }
		},
		Write: func(name, text string) modelserver.Call {
			return call("toolu_w", "Write", map[string]string{"file_path": name, "content": text + "\n"})
		},
		Edit: func(name, old, new string) modelserver.Call {
			return call("toolu_e", "Edit", map[string]string{"file_path": name, "old_string": old, "new_string": new})
		},
		Run: func(command string) modelserver.Call {
			return call("toolu_r", "Bash", map[string]string{"command": command, "description": "run it"})
		},
		Limit: anthropic.RateLimit("1"),
		Conch: func(name string, args any) []modelserver.Call {
			return []modelserver.Call{call("toolu_c", "mcp__conch__"+name, args)}
		},
	}, {
		ID: "codex", Name: "Codex", Kind: agentbin.Codex, Install: in,
		Start: func(t testing.TB, brain modelserver.Brain) (Rig, func() int) {
			rig, srv := CodexAt(t, in, brain, "")
			return rig, func() int { return len(srv.Turns()) }
		},
		Write: func(name, text string) modelserver.Call {
			return responses.Patch("call_w", "*** Begin Patch\n*** Add File: "+name+"\n+"+text+"\n*** End Patch\n")
		},
		Edit: func(name, old, new string) modelserver.Call {
			return responses.Patch("call_e", "*** Begin Patch\n*** Update File: "+name+"\n@@\n-"+old+"\n+"+new+"\n*** End Patch\n")
		},
		Run:   func(command string) modelserver.Call { return responses.Exec("call_r", command) },
		Limit: responses.RateLimit("gpt-5.5", 1),
		Conch: func(name string, args any) []modelserver.Call {
			return []modelserver.Call{responses.Search("call_find", strings.ReplaceAll(name, "_", " ")), call("call_c", "mcp__conch__"+name, args)}
		},
	}, {
		ID: "gemini", Name: "Gemini CLI", Kind: agentbin.Gemini, Model: "gemini-2.5-flash", Install: in,
		Start: func(t testing.TB, brain modelserver.Brain) (Rig, func() int) {
			rig, srv := GeminiAt(t, in, brain, 1)
			return rig, func() int { return len(srv.Turns()) }
		},
		Write: func(name, text string) modelserver.Call {
			return call("c_w", "write_file", map[string]string{"file_path": name, "content": text + "\n"})
		},
		Edit: func(name, old, new string) modelserver.Call {
			return call("c_e", "replace", map[string]string{"file_path": name, "old_string": old, "new_string": new, "instruction": "change the line"})
		},
		Run: func(command string) modelserver.Call {
			return call("c_r", "run_shell_command", map[string]string{"command": command, "description": "run it"})
		},
		Limit: gemini.PerMinuteLimit("gemini-2.5-flash", "1s"),
		Conch: func(name string, args any) []modelserver.Call {
			return []modelserver.Call{call("c_c", "mcp_conch_"+name, args)}
		},
	}}
}

// Servers are the three scripted model servers of a program (the browser
// tests' helper, cmd/agentservers), and the environment that runs all
// three CLIs against them from one process.
type Servers struct {
	Claude *anthropic.Server
	Codex  *responses.Server
	Gemini *gemini.Server
	// Env is what to add to the environment: one HOME under the root
	// given, the CLIs' folder first on PATH.
	Env []string
}

// Start starts the servers, each answering with the brain of its agent,
// and lays out root for the CLIs. Close stops them.
func Start(root string, brain func(Agent) modelserver.Brain) (*Servers, error) {
	env, err := isolated(root)
	if err != nil {
		return nil, err
	}
	home := filepath.Join(root, "home")
	codex := filepath.Join(root, "codex")
	if err := os.MkdirAll(codex, 0o755); err != nil {
		return nil, err
	}
	bins, err := agentbin.Dir()
	if err != nil {
		return nil, err
	}
	s := &Servers{}
	for _, a := range Agents {
		switch a.Kind {
		case agentbin.Claude:
			s.Claude = anthropic.Start(brain(a))
		case agentbin.Codex:
			s.Codex = responses.Start(brain(a))
		case agentbin.Gemini:
			s.Gemini = gemini.Start(brain(a))
		}
	}
	if err := codexHome(codex, s.Codex, ""); err != nil {
		s.Close()
		return nil, err
	}
	if err := geminiHome(home, 1); err != nil {
		s.Close()
		return nil, err
	}
	env = append(env, claudeEnv(s.Claude, 0)...)
	env = append(env, codexEnv(codex)...)
	env = append(env, geminiEnv(home, s.Gemini)...)
	s.Env = append(env, "PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"))
	return s, nil
}

// Close stops the servers.
func (s *Servers) Close() {
	if s.Claude != nil {
		s.Claude.Close()
	}
	if s.Codex != nil {
		s.Codex.Close()
	}
	if s.Gemini != nil {
		s.Gemini.Close()
	}
}

// Writes is a brain for a's model: it writes the file its prompt names
// ("WRITE name.txt") with "written by <agent id>", then says "Wrote
// name.txt.".
func Writes(a Agent) modelserver.Brain {
	return func(turn modelserver.Turn) modelserver.Reply {
		name := "out.txt"
		if _, rest, ok := strings.Cut(turn.FirstUser(), "WRITE "); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				name = strings.Trim(f[0], ".,;:`\"'")
			}
		}
		if len(turn.Results()) == 0 {
			return modelserver.Reply{Calls: []modelserver.Call{a.Write(name, "written by "+a.ID)}}
		}
		return modelserver.Reply{Text: "Wrote " + name + "."}
	}
}
