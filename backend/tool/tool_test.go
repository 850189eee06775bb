//go:build unix

package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// folder makes a chat folder with a few files, a link that stays inside and
// one that leads out, and returns it with the outside folder.
func folder(t *testing.T) (dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "go.mod"), "module x\n\ngo 1.26\n")
	write(filepath.Join(dir, "src", "main.go"), "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	write(filepath.Join(dir, ".git", "HEAD"), "ref: main\n")
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	must(t, os.Symlink(filepath.Join(dir, "src"), filepath.Join(dir, "inlink")))
	must(t, os.Symlink(outside, filepath.Join(dir, "outlink")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "secretlink")))
	return dir, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	dir, outside := folder(t)
	real, _ := filepath.EvalSymlinks(dir)
	for _, tc := range []struct {
		path    string
		want    string // relative to the real folder; empty when refused
		outside bool
	}{
		{"", ".", false},
		{".", ".", false},
		{"go.mod", "go.mod", false},
		{"src/../go.mod", "go.mod", false},
		{"new/dir/file.txt", "new/dir/file.txt", false},
		{filepath.Join(dir, "go.mod"), "go.mod", false},
		{"inlink/main.go", "src/main.go", false},
		{"inlink/new.go", "src/new.go", false},
		{"..", "", true},
		{"../x", "", true},
		{"src/../../x", "", true},
		{"/etc/passwd", "", true},
		{filepath.Join(outside, "secret.txt"), "", true},
		{"outlink/secret.txt", "", true},
		{"outlink/new.txt", "", true},
		{"outlink", "", true},
		{"secretlink", "", true},
		{"go.mod/x", "go.mod/x", false}, // not a folder: the tool's own error later
	} {
		got, err := Resolve(dir, tc.path)
		if tc.outside {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("Resolve(%q) = %q, %v; want ErrOutside", tc.path, got, err)
			} else if !strings.Contains(err.Error(), "outside the chat's folder") {
				t.Errorf("Resolve(%q) error %q does not say why", tc.path, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.path, err)
			continue
		}
		if want := filepath.Join(real, tc.want); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.path, got, want)
		}
	}
}

// call runs a host tool by name with JSON arguments.
func call(t *testing.T, env Env, name, args string) (string, error) {
	t.Helper()
	tl, err := Host().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Run(context.Background(), env, json.RawMessage(args))
}

func TestFileTools(t *testing.T) {
	dir, _ := folder(t)
	env := Env{Dir: dir}
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600))
	for _, tc := range []struct {
		name, tool, args string
		want             string // substring of the output, or of the error
		fails            bool
	}{
		{"list", "list_files", `{}`, "go.mod", false},
		{"list recursive skips .git", "list_files", `{"recursive":true}`, "src/main.go", false},
		{"list a file", "list_files", `{"path":"go.mod"}`, "is a file", true},
		{"list outside", "list_files", `{"path":".."}`, "outside the chat's folder", true},
		{"read", "read_file", `{"path":"go.mod"}`, "module x\n\ngo 1.26\n", false},
		{"read lines", "read_file", `{"path":"src/main.go","offset":3,"limit":1}`, "func main() {\n", false},
		{"read past end", "read_file", `{"path":"go.mod","offset":99}`, "past its end", true},
		{"read via inside link", "read_file", `{"path":"inlink/main.go"}`, "package main", false},
		{"read via outside link", "read_file", `{"path":"secretlink"}`, "outside the chat's folder", true},
		{"read missing", "read_file", `{"path":"nope.txt"}`, "no such file", true},
		{"read no path", "read_file", `{}`, `"path" is required`, true},
		{"read bad json", "read_file", `{"path":`, "not a JSON object", true},
		{"read wrong type", "read_file", `{"path":3}`, "bad arguments", true},
		{"read unknown field", "read_file", `{"path":"go.mod","mode":"x"}`, "unknown field", true},
		{"read a folder", "read_file", `{"path":"src"}`, "folder", true},
		{"read a pipe", "read_file", `{"path":"pipe"}`, "not a regular file", true},
		{"write a pipe", "write_file", `{"path":"pipe","content":"x"}`, "not a regular file", true},
		{"edit a pipe", "edit_file", `{"path":"pipe","old":"a","new":"b"}`, "not a regular file", true},
		{"search", "search_files", `{"pattern":"print\\w+"}`, "src/main.go:4: \tprintln", false},
		{"search glob", "search_files", `{"pattern":"module","glob":"*.go"}`, "No matches.", false},
		{"search skips .git", "search_files", `{"pattern":"ref: main"}`, "No matches.", false},
		{"search bad pattern", "search_files", `{"pattern":"("}`, "not a valid regular expression", true},
		{"write", "write_file", `{"path":"docs/a.txt","content":"hello"}`, "Wrote 5 bytes", false},
		{"write empty", "write_file", `{"path":"empty.txt","content":""}`, "Wrote 0 bytes", false},
		{"write no content", "write_file", `{"path":"x.txt"}`, `"content" is required`, true},
		{"write outside", "write_file", `{"path":"../x.txt","content":"x"}`, "outside", true},
		{"write through outside link", "write_file", `{"path":"outlink/x.txt","content":"x"}`, "symbolic link", true},
		{"edit", "edit_file", `{"path":"go.mod","old":"go 1.26","new":"go 1.27"}`, "Edited go.mod.", false},
		{"edit missing text", "edit_file", `{"path":"go.mod","old":"nope","new":"x"}`, "was not found", true},
		{"edit not unique", "edit_file", `{"path":"src/main.go","old":"n","new":"x"}`, "appears", true},
		{"edit no old", "edit_file", `{"path":"go.mod","new":"x"}`, `"old" is required`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(t, env, tc.tool, tc.args)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %q, %v; want an error with %q", out, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "list" {
				for _, w := range []string{"go.mod", "src/", "inlink", "outlink"} {
					if !strings.Contains(out, w) {
						t.Errorf("list %q lacks %q", out, w)
					}
				}
				return
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("got %q, want it to hold %q", out, tc.want)
			}
			if strings.Contains(out, ".git/HEAD") {
				t.Errorf("listed .git: %q", out)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "docs", "a.txt")); string(b) != "hello" {
		t.Errorf("write_file wrote %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "go.mod")); !strings.Contains(string(b), "go 1.27") {
		t.Errorf("edit_file left %q", b)
	}
}

func TestRunCommand(t *testing.T) {
	dir, _ := folder(t)
	var log bytes.Buffer
	env := Env{Dir: dir, Log: &log, Grace: 200 * time.Millisecond}

	out, err := call(t, env, "run_command", `{"command":"pwd; echo oops >&2"}`)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if !strings.Contains(out, real) || !strings.Contains(out, "oops") || !strings.Contains(out, "[exit code 0]") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(log.String(), "$ pwd; echo oops >&2") || !strings.Contains(log.String(), "oops") {
		t.Errorf("log %q", log.String())
	}

	_, err = call(t, env, "run_command", `{"command":"echo no; exit 3"}`)
	if err == nil || !strings.Contains(err.Error(), "[exit code 3]") || !strings.Contains(err.Error(), "no") {
		t.Errorf("exit 3: %v", err)
	}
	if _, err := call(t, env, "run_command", `{}`); err == nil || !strings.Contains(err.Error(), `"command" is required`) {
		t.Errorf("no command: %v", err)
	}
	if _, err := call(t, env, "run_command", `{"command":"true","timeout_seconds":99999}`); err == nil {
		t.Error("a timeout over an hour was accepted")
	}

	// Output is bounded: the head and tail are kept, the middle cut.
	out, err = call(t, env, "run_command", `{"command":"head -c 300000 /dev/zero | tr '\\0' a; echo; echo END"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > maxCommandOutput+200 || !strings.Contains(out, "bytes cut") || !strings.Contains(out, "END") {
		t.Errorf("bounded output: %d bytes, cut note %v", len(out), strings.Contains(out, "bytes cut"))
	}

	// Cancelling kills the whole group at once, children included.
	ctx, cancel := context.WithCancel(context.Background())
	tl := Host()["run_command"]
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := tl.Run(ctx, env, json.RawMessage(`{"command":"sleep 30 & echo $! > child.pid; sleep 30; wait"}`))
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stopped command: %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("stopping took %s", d)
		}
		b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		fmt.Sscan(string(b), &pid)
		if pid <= 0 {
			t.Fatalf("child.pid holds %q", b)
		}
		// The background child went with the group (a zombie until init
		// reaps it counts as gone: signal 0 still finds it, so read its state).
		deadline := time.Now().Add(2 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("the background child %d outlived the stop", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the command did not stop")
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !fileExists("/proc/self")
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestRunCommandTimeout(t *testing.T) {
	dir, _ := folder(t)
	start := time.Now()
	_, err := run(context.Background(), Env{Grace: 100 * time.Millisecond}, dir, "sleep 30", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(start) > 3*time.Second {
		t.Errorf("timeout: %v after %s", err, time.Since(start))
	}
}

func TestFetchURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "gone", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("page text"))
	}))
	defer srv.Close()
	env := Env{Dir: t.TempDir(), HTTP: srv.Client()}
	out, err := call(t, env, "fetch_url", `{"url":"`+srv.URL+`/page"}`)
	if err != nil || !strings.Contains(out, "page text") || !strings.Contains(out, "HTTP 200") {
		t.Errorf("fetch: %q, %v", out, err)
	}
	if _, err := call(t, env, "fetch_url", `{"url":"`+srv.URL+`/missing"}`); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404: %v", err)
	}
	if _, err := call(t, env, "fetch_url", `{"url":"file:///etc/passwd"}`); err == nil || !strings.Contains(err.Error(), "not an http") {
		t.Errorf("file URL: %v", err)
	}
	// Without an injected client, loopback is refused.
	if _, err := call(t, Env{Dir: env.Dir}, "fetch_url", `{"url":"`+srv.URL+`"}`); err == nil || !strings.Contains(err.Error(), "local or private") {
		t.Errorf("loopback through the default client: %v", err)
	}
	for ip, public := range map[string]bool{"127.0.0.1": false, "10.1.2.3": false, "192.168.1.1": false, "::1": false, "169.254.1.1": false, "1.1.1.1": true, "::ffff:127.0.0.1": false} {
		if got := PublicAddr(netip.MustParseAddr(ip)); got != public {
			t.Errorf("PublicAddr(%s) = %v", ip, got)
		}
	}
}

func TestUnknownTool(t *testing.T) {
	if _, err := Host().Get("delete_everything"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "read_file") {
		t.Errorf("unknown tool: %v", err)
	}
	for _, s := range Host().Specs() {
		var v map[string]any
		if err := json.Unmarshal(s.Schema, &v); err != nil || v["type"] != "object" {
			t.Errorf("%s: schema %s is not a JSON object schema: %v", s.Name, s.Schema, err)
		}
	}
}

// FuzzArguments feeds the file tools arbitrary arguments: whatever the model
// sends, a tool answers or errs, and never panics or leaves the folder.
// run_command and fetch_url are left out: fuzzed text must never run.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"go.mod"}`, `{"path":"../x","content":"y"}`, `null`, `[]`, `"s"`, `{"path":{"a":1}}`,
		`{"pattern":"(","path":"/"}`, `{"path":"a","old":"","new":null}`, `{"offset":-1,"limit":1e99,"path":"go.mod"}`, ``} {
		f.Add(s)
	}
	parent := f.TempDir()
	dir := filepath.Join(parent, "chat")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, name := range []string{"list_files", "read_file", "search_files", "write_file", "edit_file"} {
			tl := Host()[name]
			_ = tl.Title(json.RawMessage(args))
			_, _ = tl.Run(context.Background(), Env{Dir: dir}, json.RawMessage(args))
		}
		entries, _ := os.ReadDir(parent)
		if len(entries) != 1 {
			t.Fatalf("a tool wrote outside the folder: %v", entries)
		}
	})
}
