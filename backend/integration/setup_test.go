//go:build unix

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/backend/conversation"
	"conch/backend/task"
)

// Helpers killed while their worktrees' setup ran: after the restart the
// setup scripts are gone with the Conch that started them, and the
// resumed helpers carry on with their instructions, which their chats
// had not been given yet.
func TestHelpersKilledInTheirSetupResume(t *testing.T) {
	home, marks := t.TempDir(), t.TempDir()
	repo := gitRepo(t)
	// The setup waits the first time only, in a child (as npm install
	// would), and says which process waits.
	script := fmt.Sprintf("#!/bin/sh\nm=%s/$(basename \"$CONCH_WORKTREE\")\nif [ ! -e \"$m\" ]; then sleep 300 & echo $! > \"$m\"; wait; fi\n", marks)
	if err := os.MkdirAll(filepath.Join(repo, ".conch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".conch", "worktree-setup"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", ".conch"}, {"commit", "-q", "-m", "setup"}} {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	model := startModel(t, 1)
	s := start(t, home)
	body := fmt.Sprintf(`{"kind":"openai","name":"Scripted","baseUrl":%q,"model":%q}`, model.base, scriptedModel)
	if code := s.call(t, "PUT", "/api/providers/scripted", body, nil); code != 200 {
		t.Fatalf("connect the scripted model: %d", code)
	}
	var c conversation.Conversation
	if code := s.call(t, "POST", "/api/conversations", fmt.Sprintf(`{"provider":"scripted","mode":"auto","cwd":%q}`, repo), &c); code != 201 {
		t.Fatalf("make a chat: %d", code)
	}
	if code := s.call(t, "POST", "/api/conversations/"+c.ID+"/messages", `{"text":"Split it in two. [delegate crash-s]"}`, nil); code != 202 {
		t.Fatalf("send: %d", code)
	}
	var pids []int
	deadline := time.Now().Add(20 * time.Second)
	for len(pids) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the helpers' setups never started (%d did)", len(pids))
		}
		time.Sleep(50 * time.Millisecond)
		pids = pids[:0]
		files, _ := os.ReadDir(marks)
		for _, f := range files {
			b, _ := os.ReadFile(filepath.Join(marks, f.Name()))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	var list struct {
		Tasks []task.Task `json:"tasks"`
	}
	s.call(t, "GET", "/api/tasks", "", &list)
	if len(list.Tasks) != 2 {
		t.Fatalf("%d tasks, want the two helpers", len(list.Tasks))
	}
	s.kill9(t)

	s = start(t, home)
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	deadline = time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Errorf("helper setup process %d outlived the Conch that started it", pid)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, h := range list.Tasks {
		got := s.waitTask(t, h.ID, func(t task.Task) bool { return t.Status == task.Interrupted })
		if code := s.call(t, "POST", "/api/tasks/"+h.ID+"/resume", "", nil); code != 200 {
			t.Fatalf("resume %s: %d", got.ID, code)
		}
	}
	for _, h := range list.Tasks {
		mk := markerRe.FindStringSubmatch(h.Text)[1]
		done := s.waitTask(t, h.ID, func(t task.Task) bool { return t.Status.Finished() })
		if done.Status != task.Done || done.Result == nil || done.Result.Text != mk+" is done." {
			t.Errorf("resumed helper %s: %s %q %+v", mk, done.Status, done.Error, done.Result)
		}
		req, ok := model.last(mk)
		if !ok {
			t.Errorf("the model was never told helper %s's instructions", mk)
			continue
		}
		if !strings.Contains(req.transcript(), "Carry on from where it stopped") {
			t.Errorf("helper %s's model was not told it carries on:\n%s", mk, req.transcript())
		}
	}
}

// zombie reports whether pid has exited and waits for its parent to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// gitRepo is a git repository with one commit.
func gitRepo(t *testing.T) string {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# crash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "README.md")
	git("commit", "-q", "-m", "start")
	return dir
}
