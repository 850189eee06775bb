//go:build unix

package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"conch/backend/task"
	"conch/backend/testrig/conchserve"
)

// bin is the real conch binary, built once for every test here.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conch-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "conch")
	_, file, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build conch:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// conchServe is a real `conch serve` on a scratch home.
type conchServe struct {
	home, base, token string
}

// serve starts `conch serve` on a fresh home and a free port.
func serve(t *testing.T) *conchServe { t.Helper(); return serveWith(t, []string{"serve"}) }

// serveWith is serve with args before --home instead of "serve".
func serveWith(t *testing.T, args []string) *conchServe {
	t.Helper()
	home := t.TempDir()
	s := conchserve.Start(t, bin, append(args, "--home", home, "--addr", "127.0.0.1:0"), []string{"DISPLAY=", "WAYLAND_DISPLAY="})
	return &conchServe{home: home, base: s.Base, token: s.Token}
}

// result is what one run of the conch command did.
type result struct {
	code           int
	stdout, stderr string
}

// conch runs the conch command on home ($CONCH_HOME) in dir.
func conch(t *testing.T, home string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CONCH_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// must runs conch and wants it to exit 0.
func must(t *testing.T, home string, args ...string) result {
	t.Helper()
	r := conch(t, home, args...)
	if r.code != 0 {
		t.Fatalf("conch %q = %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// task reads task id with `conch tasks --json`.
func (s *conchServe) task(t *testing.T, id string) (task.Task, bool) {
	t.Helper()
	var l struct {
		Tasks []task.Task `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(must(t, s.home, "tasks", "--json").stdout), &l); err != nil {
		t.Fatal(err)
	}
	for _, tk := range l.Tasks {
		if tk.ID == id {
			return tk, true
		}
	}
	return task.Task{}, false
}

// waitFor waits until task id stands as ok says.
func (s *conchServe) waitFor(t *testing.T, id string, what string, ok func(task.Task) bool) task.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tk, _ := s.task(t, id)
		if ok(tk) {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never %s; last %+v", id, what, tk)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start runs `conch run` (no --wait) and returns the new task's id.
func (s *conchServe) start(t *testing.T, args ...string) string {
	t.Helper()
	r := must(t, s.home, append([]string{"run", "--cwd", t.TempDir()}, args...)...)
	id := strings.TrimSpace(r.stdout)
	if !strings.Contains(r.stderr, "conch logs -f "+id) {
		t.Fatalf("conch run said %q on stderr, want how to follow %s", r.stderr, id)
	}
	return id
}

// Each verb against a real conch serve: run, tasks (text and JSON), logs,
// stop, retry, rm, open.
func TestTheVerbsDriveARealServe(t *testing.T) {
	s := serve(t)
	id := s.start(t, "echo", "hello", "from", "the", "cli")
	done := s.waitFor(t, id, "done", func(t task.Task) bool { return t.Status == task.Done })
	if done.Text != "echo hello from the cli" || done.Mode != task.Auto {
		t.Fatalf("conch run made %q in mode %s, want the words joined, in auto", done.Text, done.Mode)
	}
	if r := must(t, s.home, "logs", id); r.stdout != "hello from the cli\n" {
		t.Fatalf("conch logs printed %q", r.stdout)
	}
	if r := must(t, s.home, "tasks"); !regexp.MustCompile(`(?m)^` + id + `\s+done\s+\d+s\s+echo hello from the cli$`).MatchString(r.stdout) {
		t.Fatalf("conch tasks printed\n%s", r.stdout)
	}

	long := s.start(t, "sleep 60")
	s.waitFor(t, long, "running", func(t task.Task) bool { return t.Status == task.Running })
	if r := must(t, s.home, "tasks", "--group", "working", "--json"); !strings.Contains(r.stdout, long) || strings.Contains(r.stdout, id) {
		t.Fatalf("conch tasks --group working --json printed\n%s", r.stdout)
	}
	var stopped task.Task
	if err := json.Unmarshal([]byte(must(t, s.home, "stop", long, "--json").stdout), &stopped); err != nil || stopped.Status != task.Stopped {
		t.Fatalf("conch stop --json: %v %+v", err, stopped)
	}
	if r := must(t, s.home, "retry", id); !strings.HasPrefix(r.stdout, `Queued again "echo hello from the cli": `) {
		t.Fatalf("conch retry printed %q", r.stdout)
	}
	s.waitFor(t, id, "done again", func(t task.Task) bool { return t.Status == task.Done })
	if r := conch(t, s.home, "resume", id); r.code != 1 || !strings.Contains(r.stderr, "conch: resume "+id+": ") {
		t.Fatalf("conch resume of a done command = %d %q, want 1 with Conch's reason", r.code, r.stderr)
	}

	// open: every page open on Conch hears app.open with the task's id.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/api/events",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + s.token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	must(t, s.home, "open", id)
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("the page never heard app.open: %v", err)
		}
		if string(b) == `{"type":"app.open","id":"`+id+`"}` {
			break
		}
	}

	if r := must(t, s.home, "rm", long); r.stdout != "Deleted "+long+".\n" {
		t.Fatalf("conch rm printed %q", r.stdout)
	}
	if _, ok := s.task(t, long); ok {
		t.Fatal("conch rm left the task listed")
	}
	if r := conch(t, s.home, "rm", long); r.code != 1 || !strings.Contains(r.stderr, "conch: rm "+long+": ") {
		t.Fatalf("conch rm of a deleted task = %d %q", r.code, r.stderr)
	}
}

// conch run --wait exits with the task's outcome, its output on stdout.
func TestRunWaitExitsWithTheOutcome(t *testing.T) {
	s := serve(t)
	dir := t.TempDir()
	if r := conch(t, s.home, "run", "--wait", "--cwd", dir, "echo fine; pwd"); r.code != 0 || r.stdout != "fine\n"+dir+"\n" {
		t.Fatalf("a command that succeeds: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := conch(t, s.home, "run", "--wait", "--cwd", dir, "echo broke; exit 7")
	if r.code != 1 || r.stdout != "broke\n" || !strings.Contains(r.stderr, "code 7") {
		t.Fatalf("a command that fails: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = conch(t, s.home, "run", "--wait", "--json", "--cwd", dir, "echo quiet")
	var end task.Task
	if err := json.Unmarshal([]byte(r.stdout), &end); r.code != 0 || err != nil || end.Status != task.Done || end.ExitCode == nil || *end.ExitCode != 0 {
		t.Fatalf("--wait --json: %d %v %q", r.code, err, r.stdout)
	}
	// In ask mode it asks first: --wait does not hang on the question.
	r = conch(t, s.home, "run", "--wait", "--mode", "ask", "--cwd", dir, "echo later")
	if r.code != 4 || !strings.Contains(r.stderr, "needs your OK: Run `echo later`") || !strings.Contains(r.stderr, "conch answer ") {
		t.Fatalf("a command that asks: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// conch logs -f follows a task that prints over a few seconds to its end:
// all of its output, once, in order.
func TestLogsFollowsATaskToItsEnd(t *testing.T) {
	s := serve(t)
	// The last lines come all at once as it ends: only a follow that reads
	// on after it sees the task finished prints them.
	id := s.start(t, "for i in $(seq 1 20); do echo line $i; sleep 0.12; done; seq 21 25 | sed 's/^/line /'")
	began := time.Now()
	r := must(t, s.home, "logs", "-f", id)
	var want strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if r.stdout != want.String() {
		t.Fatalf("conch logs -f printed\n%s\nwant\n%s", r.stdout, want.String())
	}
	if took := time.Since(began); took < time.Second {
		t.Fatalf("conch logs -f ended after %v: it did not follow the task live", took)
	}
	if tk, _ := s.task(t, id); tk.Status != task.Done {
		t.Fatalf("conch logs -f ended while the task was %s", tk.Status)
	}
}

// conch answer on an ask-mode task: allow runs it, deny refuses it; a task
// that asks nothing is refused.
func TestAnswerAnAskModeTask(t *testing.T) {
	s := serve(t)
	dir := t.TempDir()
	ask := func(file string) string {
		id := s.start(t, "--mode", "ask", "echo ran > "+file+"; echo wrote "+file)
		s.waitFor(t, id, "asking", func(t task.Task) bool { return t.Status == task.NeedsYou })
		return id
	}
	yes := ask(filepath.Join(dir, "yes"))
	if r := must(t, s.home, "tasks", "--group", "needs-you"); !strings.Contains(r.stdout, yes) {
		t.Fatalf("conch tasks --group needs-you printed\n%s", r.stdout)
	}
	if r := must(t, s.home, "answer", yes, "allow"); !strings.HasPrefix(r.stdout, "Allowed ") {
		t.Fatalf("conch answer allow printed %q", r.stdout)
	}
	if r := must(t, s.home, "logs", "-f", yes); r.stdout != "wrote "+filepath.Join(dir, "yes")+"\n" {
		t.Fatalf("after allow, conch logs -f printed %q", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "yes")); err != nil {
		t.Fatalf("allowed, the command did not run: %v", err)
	}
	no := ask(filepath.Join(dir, "no"))
	var denied task.Task
	if err := json.Unmarshal([]byte(must(t, s.home, "answer", no, "deny", "--json").stdout), &denied); err != nil {
		t.Fatal(err)
	}
	end := s.waitFor(t, no, "ended", func(t task.Task) bool { return t.Status.Finished() })
	if end.Status == task.Done {
		t.Fatalf("denied, the task ended done")
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Fatal("denied, the command ran")
	}
	if r := conch(t, s.home, "answer", yes, "allow"); r.code != 1 || !strings.Contains(r.stderr, "it asks nothing") {
		t.Fatalf("answering a task that asks nothing: %d %q", r.code, r.stderr)
	}
}

// With no Conch on the home every verb exits 3 saying how to start one,
// also when a Conch that died left its address behind; a command line
// that does not parse exits 2.
func TestErrorsWhenNoConchRunsAndUsage(t *testing.T) {
	home := t.TempDir()
	verbs := [][]string{{"tasks"}, {"run", "true"}, {"logs", "x"}, {"stop", "x"}, {"retry", "x"},
		{"resume", "x"}, {"rm", "x"}, {"answer", "x", "allow"}, {"open", "x"}}
	check := func(why string) {
		for _, v := range verbs {
			r := conch(t, home, v...)
			if r.code != 3 || !strings.Contains(r.stderr, "no Conch is running on "+home) || !strings.Contains(r.stderr, "conch serve") {
				t.Errorf("%s: conch %q = %d %q", why, v, r.code, r.stderr)
			}
		}
	}
	check("no Conch ever ran")
	if err := os.WriteFile(filepath.Join(home, "gateway-url"), []byte("http://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "gateway-token"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("a dead Conch's address")
	for _, args := range [][]string{{"logs"}, {"answer", "x", "maybe"}, {"tasks", "--bogus"}, {"tasks", "extra"},
		{"run"}, {"frobnicate"}} {
		if r := conch(t, home, args...); r.code != 2 || !strings.Contains(r.stderr, "conch --help") {
			t.Errorf("conch %q = %d %q, want 2 and a pointer to --help", args, r.code, r.stderr)
		}
	}
	// A value Conch itself refuses is a usage error too.
	s := serve(t)
	if r := conch(t, s.home, "tasks", "--status", "sleepy"); r.code != 2 || !strings.Contains(r.stderr, `"sleepy"`) {
		t.Errorf("an unknown status: %d %q", r.code, r.stderr)
	}
}

// The completions load in real shells and complete there: a verb, and a
// task id of the running Conch.
func TestCompletions(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil && (runtime.GOOS == "linux" || sh == "bash") {
			t.Fatalf("no %s (scripts/setup installs it): %v", sh, err)
		} else if err != nil {
			t.Skipf("no %s here: %v", sh, err)
		}
	}
	out, err := exec.Command("bash", "-c", "source <('"+bin+"' completion bash) && complete -p conch").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-F __start_conch conch") {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	// "conch lo<TAB>" through the loaded function, with bash-completion
	// loaded as an interactive shell has it.
	script := "source /usr/share/bash-completion/bash_completion\nsource <('" + bin + "' completion bash)\n" +
		"COMP_WORDS=(conch lo); COMP_CWORD=1; COMP_LINE='conch lo'; COMP_POINT=8\n__start_conch\necho \"${COMPREPLY[@]}\""
	onPath := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	bash := exec.Command("bash", "-c", script)
	bash.Env = onPath
	out, err = bash.Output() // stderr: compopt minds being called outside a real <TAB>
	if err != nil || strings.TrimSpace(string(out)) != "logs" {
		t.Fatalf("conch lo<TAB> in bash: %v %q", err, out)
	}
	out, err = exec.Command("zsh", "-c", "autoload -U compinit && compinit -u -D; source <('"+bin+"' completion zsh); print -r -- $_comps[conch]").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "_conch" {
		t.Fatalf("zsh: %v %q", err, out)
	}
	s := serve(t)
	id := s.start(t, "true")
	fish := exec.Command("fish", "--no-config", "-c", "'"+bin+"' completion fish | source; complete -C 'conch logs '; complete -C 'conch ans'")
	fish.Env = append(onPath, "CONCH_HOME="+s.home)
	out, err = fish.CombinedOutput()
	if err != nil || !strings.Contains(string(out), id+"\t") || !strings.Contains(string(out), "answer\t") {
		t.Fatalf("fish completed %v\n%s\nwant the task %s and the verb answer", err, out, id)
	}
}

// The commands conch had before its verbs work as documented: no verb
// opens the window (with no display, it serves instead, taking serve's
// flags), doctor and backup ask the running Conch, version, help, serve's
// refusal of a remote address, backup's usage.
func TestTheOlderCommandsWorkAsBefore(t *testing.T) {
	s := serveWith(t, nil)
	if r := conch(t, t.TempDir(), "doctor", "--home", s.home); !strings.Contains(r.stdout, "Asked the running Conch at "+s.base) || r.code > 1 {
		t.Fatalf("conch doctor = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "b.db")
	if r := must(t, t.TempDir(), "backup", file, "--home", s.home); !strings.Contains(r.stdout, "Asked the running Conch at "+s.base) {
		t.Fatalf("conch backup printed\n%s", r.stdout)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
		t.Fatalf("the backup: %v", err)
	}
	if r := must(t, s.home, "version"); !strings.HasPrefix(r.stdout, "conch ") {
		t.Fatalf("conch version printed %q", r.stdout)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(must(t, s.home, "version", "--json").stdout), &v); err != nil || v["version"] == "" {
		t.Fatalf("conch version --json: %v %v", err, v)
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		if r := must(t, s.home, args...); !strings.Contains(r.stdout, "Drive a running Conch:") || !strings.Contains(r.stdout, "Exit codes:") {
			t.Fatalf("conch %v printed\n%s", args, r.stdout)
		}
	}
	if r := must(t, s.home, "serve", "--help"); !strings.Contains(r.stdout, "--allow-remote") {
		t.Fatalf("conch serve --help printed\n%s", r.stdout)
	}
	if r := conch(t, t.TempDir(), "serve", "--addr", "0.0.0.0:0"); r.code != 2 || !strings.Contains(r.stderr, "--allow-remote") {
		t.Fatalf("conch serve on 0.0.0.0: %d %q", r.code, r.stderr)
	}
	if r := conch(t, s.home, "backup"); r.code != 2 {
		t.Fatalf("conch backup with no file: %d %q", r.code, r.stderr)
	}
}
