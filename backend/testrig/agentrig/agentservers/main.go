// Command agentservers serves the scripted model APIs of the three
// coding-agent CLIs for the browser tests, so a Conch started with the
// environment it prints runs the real Claude Code, Codex and Gemini CLI
// against them.
//
//	agentservers DIR
//
// It lays out DIR (a HOME, a CODEX_HOME, settings), prints one JSON line
// {"env": {"KEY": "value", …}} and serves until its stdin closes or it is
// signalled. Each CLI's model writes the file a prompt names ("WRITE
// name.txt"), then answers "Wrote name.txt.".
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"conch/backend/testrig/agentrig"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: agentservers DIR")
		os.Exit(2)
	}
	s, err := agentrig.Start(os.Args[1], agentrig.Writes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentservers:", err)
		os.Exit(1)
	}
	defer s.Close()
	env := map[string]string{}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"env": env}); err != nil {
		fmt.Fprintln(os.Stderr, "agentservers:", err)
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	select {
	case <-done:
	case <-sig:
	}
}
