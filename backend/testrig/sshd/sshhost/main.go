//go:build linux

// Command sshhost serves one host for the browser tests: a real sshd on a
// loopback port, logging in as a Unix user made for it (as the Go tests'
// sshd rig does; it needs root).
//
//	sshhost
//
// It prints one JSON line, {"alias", "config", "fingerprint", "user",
// "home"} (or {"skip": why} where it cannot), then takes commands a line
// each on stdin: "down" takes the host off the network (sshd and its
// connections end; what the user's sessions started runs on), "up" brings
// it back, and "claude {JSON env}" installs the real Claude Code CLI (the
// pinned one, agentbin) in the user's ~/.local/bin, run with env (its
// model server's address and key, as agentservers prints them), and
// "repo" makes ~/repo there, a git repository of one commit. When stdin closes, or it is signalled, the host goes: sshd,
// the user's processes, the user and its home.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/sshd"
)

// tb is the rig's test: a failure or a skip says so on stdout and ends
// the command (after the cleanups made so far).
type tb struct {
	cleanups []func()
}

type ended struct{ line map[string]string }

func (t *tb) Helper()           {}
func (t *tb) Cleanup(f func())  { t.cleanups = append(t.cleanups, f) }
func (t *tb) Fatal(args ...any) { panic(ended{map[string]string{"error": fmt.Sprint(args...)}}) }
func (t *tb) Skip(args ...any)  { panic(ended{map[string]string{"skip": fmt.Sprint(args...)}}) }
func (t *tb) Fatalf(f string, args ...any) {
	panic(ended{map[string]string{"error": fmt.Sprintf(f, args...)}})
}
func (t *tb) Skipf(f string, args ...any) {
	panic(ended{map[string]string{"skip": fmt.Sprintf(f, args...)}})
}

// clean runs the cleanups, last first.
func (t *tb) clean() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func main() {
	t := &tb{}
	code := run(t)
	t.clean()
	os.Exit(code)
}

func run(t *tb) (code int) {
	out := json.NewEncoder(os.Stdout)
	defer func() {
		if v := recover(); v != nil {
			e, ok := v.(ended)
			if !ok {
				panic(v)
			}
			_ = out.Encode(e.line)
			if e.line["error"] != "" {
				code = 1
			}
		}
	}()
	s := sshd.Start(t, sshd.Options{})
	if err := out.Encode(map[string]string{"alias": s.Alias, "config": s.Config, "fingerprint": s.Fingerprint(), "user": s.User, "home": s.Home}); err != nil {
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
	}()
	for {
		select {
		case <-sig:
			return 0
		case line, ok := <-lines:
			if !ok {
				return 0
			}
			verb, rest, _ := strings.Cut(line, " ")
			said := map[string]string{"done": verb}
			switch verb {
			case "down":
				s.Down()
			case "up":
				s.Up()
			case "claude":
				if err := installClaude(s, rest); err != nil {
					said["error"] = err.Error()
				}
			case "repo":
				s.As(`git init -q -b main repo && cd repo && echo "on the host" > README && git add README && git -c user.name=Host -c user.email=host@example.com commit -qm first`)
			}
			_ = out.Encode(said)
		}
	}
}

// installClaude puts the pinned Claude Code CLI on the host, run with the
// environment envJSON holds ({"KEY": "value"}).
func installClaude(s *sshd.Server, envJSON string) error {
	var env map[string]string
	if err := json.Unmarshal([]byte(envJSON), &env); err != nil {
		return fmt.Errorf("claude takes the environment as a JSON object: %w", err)
	}
	dir, err := agentbin.DirOf(agentbin.Newest)
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, agentbin.Claude)
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no Claude Code CLI at %s (scripts/setup --test installs it): %w", bin, err)
	}
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	s.InstallCLI(agentbin.Claude, bin, kv)
	return nil
}
