//go:build linux

package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"conch/backend/client"
	"conch/backend/conversation"
	"conch/backend/handoff"
	"conch/backend/service"
	"conch/backend/task"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/anthropic"
	"conch/backend/testrig/modelserver/chatcompletions"
	"conch/backend/testrig/sshd"
)

// committer is the model of Claude Code on a host: it writes name, commits
// it in its worktree, and says so.
func committer(name string) modelserver.Brain {
	claude := agentrig.Agents[0]
	return func(turn modelserver.Turn) modelserver.Reply {
		if strings.Contains(turn.FirstUser(), "then fail") {
			// Writes three.txt, then its model fails: the helper ends
			// failed with work in its worktree.
			if len(turn.Results()) == 0 {
				return modelserver.Reply{Calls: []modelserver.Call{claude.Write("three.txt", "left on the host")}}
			}
			b, _ := json.Marshal(anthropic.ErrorBody("invalid_request_error", "this model cannot go on"))
			return modelserver.Reply{Status: http.StatusBadRequest, Body: string(b)}
		}
		switch len(turn.Results()) {
		case 0:
			return modelserver.Reply{Calls: []modelserver.Call{claude.Write(name, "made on "+name)}}
		case 1:
			return modelserver.Reply{Calls: []modelserver.Call{claude.Run("git add " + name + " && git -c user.name=Helper -c user.email=helper@example.com commit -qm 'add " + name + "'")}}
		}
		return modelserver.Reply{Text: "Committed " + name + "."}
	}
}

// hostRepo makes ~/repo on the host, as its user: one commit of a README
// that says readme.
func hostRepo(t *testing.T, s *sshd.Server, readme string) {
	t.Helper()
	s.As(`git init -q -b main repo && cd repo && echo ` + readme + ` > README && git add README && git -c user.name=Me -c user.email=me@example.com commit -qm first`)
}

// trusting is git's environment for the test's own git commands: every
// folder trusted (the hosts' repositories belong to their users).
func trusting(t *testing.T) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(cfg, []byte("[safe]\n\tdirectory = *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "GIT_CONFIG_GLOBAL="+cfg)
}

// gitOut runs git in dir, trusting every folder.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = trusting(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A delegate with a part on each of two hosts and one here: three cards,
// each done; each host's helper worked in a worktree of its own made in
// the repository there, as that host's user, and committed on its branch
// there; "Fetch to this computer" brings one branch into the clone here
// (the chat's folder) and merges nothing. A fourth part, on the first
// host, fails with work in its worktree: its salvage ref is made there.
func TestADelegateSplitsAcrossTwoHostsAndHere(t *testing.T) {
	one, two := sshd.Start(t, sshd.Options{}), sshd.Start(t, sshd.Options{})
	for _, h := range []struct {
		s    *sshd.Server
		file string
	}{{one, "one.txt"}, {two, "two.txt"}} {
		hostRepo(t, h.s, "the repository on "+h.file)
		rig, _ := agentrig.Claude(t, committer(h.file), 0)
		h.s.InstallCLI("claude", rig.Bin, rig.Env)
	}
	// The clone here is of the first host's repository.
	local := filepath.Join(t.TempDir(), "app")
	clone := exec.Command("git", "clone", "-q", filepath.Join(one.Home, "repo"), local)
	clone.Env = trusting(t)
	if out, err := clone.CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	head := gitOut(t, local, "rev-parse", "HEAD")

	parts := []map[string]any{
		{"title": "One", "instructions": "Add one.txt", "host": "one", "cwd": "~/repo", "provider": "claude-code", "worktree": true},
		{"title": "Two", "instructions": "Add two.txt", "host": "two", "cwd": "~/repo", "provider": "claude-code", "worktree": true},
		{"title": "Here", "instructions": "LOCAL part", "model": "same"},
		{"title": "Three", "instructions": "Add three.txt then fail", "host": "one", "cwd": "~/repo", "provider": "claude-code", "worktree": true},
	}
	model := chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply {
		switch {
		case strings.Contains(turn.FirstUser(), "LOCAL part"):
			return modelserver.Reply{Text: "Did the part here."}
		case len(turn.Results()) == 0:
			args, _ := json.Marshal(map[string]any{"parts": parts})
			return modelserver.Reply{Calls: []modelserver.Call{{ID: "call_d", Name: handoff.DelegateTool, Args: args}}}
		}
		return modelserver.Reply{Text: "All three are done."}
	}, chatcompletions.Models("test-model"))

	r := startRemoteServe(t, one)
	c := r.dial(t)
	ctx := context.Background()
	// Each host has its own ssh config; the desktop reads one file that
	// names both.
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	joinConfigs(t, cfg, one.Config, two.Config)
	if err := c.Do(ctx, http.MethodPatch, "/api/preferences", map[string]any{"sshConfig": cfg}, nil); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[string]*sshd.Server{"one": one, "two": two} {
		if tr := readyHostAs(t, c, id, s); tr.Host.Status != "ready" {
			t.Fatalf("host %s after its test: %s (%s)", id, tr.Host.Status, tr.Host.Reason)
		}
	}
	if err := c.Do(ctx, http.MethodPut, "/api/providers/scripted", map[string]any{"kind": "openai", "name": "Scripted", "baseUrl": model.BaseURL(), "model": "test-model"}, nil); err != nil {
		t.Fatal(err)
	}
	var parent conversation.Conversation
	if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"provider": "scripted", "model": "test-model", "mode": "auto", "cwd": local}, &parent); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, http.MethodPost, "/api/conversations/"+parent.ID+"/messages", map[string]string{"text": "Split it three ways"}, nil); err != nil {
		t.Fatal(err)
	}

	var list service.TaskList
	deadline := time.Now().Add(120 * time.Second)
	for {
		if err := c.Do(ctx, http.MethodGet, "/api/tasks?conversation="+parent.ID, nil, &list); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, tk := range list.Tasks {
			if tk.Status.Finished() {
				done++
			}
		}
		if len(list.Tasks) == 4 && done == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the four helpers did not finish: %+v", list.Tasks)
		}
		time.Sleep(200 * time.Millisecond)
	}
	byTitle := map[string]task.Task{}
	for _, tk := range list.Tasks {
		byTitle[tk.Title] = tk
		if want := task.Done; tk.Title != "Three" && tk.Status != want || tk.Kind != task.Helper {
			t.Errorf("%s: %s %s (%s)", tk.Title, tk.Kind, tk.Status, tk.Error)
		}
	}
	// The helper that failed there left its work there, saved as a salvage
	// commit in the host's repository, and its card says so.
	three := byTitle["Three"]
	if three.Status != task.Failed || three.Worktree == nil || three.Worktree.Salvage == nil || three.Worktree.Salvage.Ref != "refs/conch/salvage/"+three.ID {
		t.Fatalf("the failed helper on a host: %s (%s) worktree %+v", three.Status, three.Error, three.Worktree)
	}
	if files := gitOut(t, filepath.Join(one.Home, "repo"), "show", "--name-only", "--format=", three.Worktree.Salvage.Ref); files != "three.txt" {
		t.Errorf("its salvage commit on the host holds %q", files)
	}
	if h := byTitle["Here"]; h.Host != "" || h.Result == nil || h.Result.Text != "Did the part here." {
		t.Errorf("the part here: host %q result %+v", h.Host, h.Result)
	}
	for _, h := range []struct {
		id, title, file string
		s               *sshd.Server
	}{{"one", "One", "one.txt", one}, {"two", "Two", "two.txt", two}} {
		tk := byTitle[h.title]
		w := tk.Worktree
		if tk.Host != h.id || w == nil || !strings.HasPrefix(w.Path, h.s.Home+"/") || !strings.HasPrefix(w.Branch, "conch/") || !w.Kept || w.Work.Ahead != 1 {
			t.Fatalf("%s: host %q worktree %+v", h.title, tk.Host, w)
		}
		if log := gitOut(t, filepath.Join(h.s.Home, "repo"), "log", "--format=%s", w.Branch); log != "add "+h.file+"\nfirst" {
			t.Errorf("%s: its branch there says %q", h.title, log)
		}
		if owner := h.s.As("stat -c %U " + w.Path + "/" + h.file); strings.TrimSpace(owner) != h.s.User {
			t.Errorf("%s: %s is %s's, not the host user's", h.title, h.file, owner)
		}
	}

	// Fetch to this computer: the first host's branch, into the clone.
	oneTask := byTitle["One"]
	var f service.Fetched
	if err := c.Do(ctx, http.MethodPost, "/api/tasks/"+oneTask.ID+"/fetch", nil, &f); err != nil {
		t.Fatal(err)
	}
	if f.Branch != oneTask.Worktree.Branch || f.Commits != 1 || f.Repo != local {
		t.Errorf("fetched %+v", f)
	}
	if log := gitOut(t, local, "log", "--format=%s", oneTask.Worktree.Branch); log != "add one.txt\nfirst" {
		t.Errorf("the branch here says %q", log)
	}
	if now := gitOut(t, local, "rev-parse", "HEAD"); now != head {
		t.Errorf("the clone's HEAD moved from %s to %s: something was merged", head, now)
	}
	// The second host's repository is another one: the clone here lacks
	// the commit its branch started from, so nothing is fetched.
	err := c.Do(ctx, http.MethodPost, "/api/tasks/"+byTitle["Two"].ID+"/fetch", nil, nil)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || !strings.Contains(apiErr.Message, "not a clone of the same repository") {
		t.Errorf("fetching from another repository: %v", err)
	}
}

// A tool that sends work to a host nobody added, or to one that does not
// answer, starts nothing, and its result says why and which hosts there
// are, for the model to tell the person or pick again.
func TestToolsOnAnUnknownOrDownHostStartNothing(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	rig, _ := agentrig.Claude(t, func(modelserver.Turn) modelserver.Reply { return modelserver.Reply{Text: "never asked"} }, 0)
	s.InstallCLI("claude", rig.Bin, rig.Env)
	calls := map[string]modelserver.Call{
		"unknown": {ID: "call_u", Name: handoff.DelegateTool, Args: json.RawMessage(`{"parts":[{"title":"Far","instructions":"Do it far away","host":"nope","provider":"claude-code"}]}`)},
		"down":    {ID: "call_d", Name: handoff.BackgroundTool, Args: json.RawMessage(`{"text":"Do it on the box","host":"box","provider":"claude-code"}`)},
	}
	model := chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply {
		if res := turn.Results(); len(res) > 0 {
			return modelserver.Reply{Text: "Tool said: " + res[len(res)-1].Text}
		}
		for name, call := range calls {
			if strings.Contains(turn.FirstUser(), name) {
				return modelserver.Reply{Calls: []modelserver.Call{call}}
			}
		}
		return modelserver.Reply{Text: "?"}
	}, chatcompletions.Models("test-model"))
	r := startRemoteServe(t, s)
	c := r.dial(t)
	ctx := context.Background()
	readyHost(t, c, s)
	if err := c.Do(ctx, http.MethodPut, "/api/providers/scripted", map[string]any{"kind": "openai", "name": "Scripted", "baseUrl": model.BaseURL(), "model": "test-model"}, nil); err != nil {
		t.Fatal(err)
	}
	s.Down()
	defer s.Up()
	for _, c2 := range []struct{ say, want string }{
		{"unknown", `there is no host "nope"; the hosts that can take work are box`},
		{"down", "could not be reached"},
	} {
		var conv conversation.Conversation
		if err := c.Do(ctx, http.MethodPost, "/api/conversations", map[string]any{"provider": "scripted", "model": "test-model", "mode": "auto", "cwd": t.TempDir()}, &conv); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, http.MethodPost, "/api/conversations/"+conv.ID+"/messages", map[string]string{"text": "send it, " + c2.say}, nil); err != nil {
			t.Fatal(err)
		}
		reply := ""
		waitChat(t, c, conv.ID, c2.say+": a reply after the tool", 60*time.Second, func(p chatPage) bool {
			for _, m := range p.Messages {
				if m.Kind == conversation.Assistant && strings.HasPrefix(m.Text, "Tool said: ") && !p.Conversation.Running {
					reply = m.Text
				}
			}
			return reply != ""
		})
		t.Logf("%s: %s", c2.say, reply)
		if low := strings.ToLower(reply); !strings.Contains(low, strings.ToLower(c2.want)) || !strings.Contains(low, "nothing was started") {
			t.Errorf("%s: the tool said %q, want it to say %q and that nothing was started", c2.say, reply, c2.want)
		}
		var list service.TaskList
		if err := c.Do(ctx, http.MethodGet, "/api/tasks?conversation="+conv.ID, nil, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Tasks) != 0 {
			t.Errorf("%s: %d tasks were started", c2.say, len(list.Tasks))
		}
	}
}
