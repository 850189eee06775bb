package gateway_test

import (
	"context"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"conch/backend/backup"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/output"
	"conch/backend/provider/shell"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// GET /api/backup answers a live snapshot, taken while a task runs, as a
// download that opens as a store; ?output=1 a tar with the logs, which
// restores. It needs the token like every route.
func TestBackupRoute(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	st, err := store.Open(filepath.Join(home, backup.DBName))
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	logs := output.New(filepath.Join(home, "tasks"))
	runner := taskrun.New(taskrun.Config{Store: st, Bus: bus, Logs: logs, Home: work,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: work, Grace: 300 * time.Millisecond}}})
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{
		API: service.New(service.Config{Tasks: runner, Logs: logs, Prefs: st, Backup: &backup.Source{Store: st, Home: home}}),
		Bus: bus, Token: token,
	}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() { bus.Close(); srv.Close(); runner.Stop(); _ = st.Close() })
	e := &env{srv: srv, base: srv.URL, bus: bus}

	tk, err := runner.Create(taskrun.CreateRequest{Text: `for i in $(seq 1 10000); do echo "line $i"; sleep 0.02; done`,
		Options: taskrun.Options{Mode: string(task.Auto), Cwd: work}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, _ := runner.Get(tk.ID)
		if size, _ := logs.Size(tk.ID); got.Status == task.Running && size > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}

	if resp, _ := e.do(t, req{method: "GET", path: "/api/backup", noToken: true}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", resp.StatusCode)
	}
	if resp, body := e.do(t, req{method: "POST", path: "/api/backup", body: "{}"}); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do(t, req{method: "GET", path: "/api/backup?output=maybe"}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "output must be 1") {
		t.Fatalf("?output=maybe: %d %s", resp.StatusCode, body)
	}

	for _, tc := range []struct {
		path, ext, ctype string
	}{{"/api/backup", ".db", "application/octet-stream"}, {"/api/backup?output=1", ".tar", "application/x-tar"}} {
		resp, body := e.do(t, req{method: "GET", path: tc.path})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.ctype || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("GET %s: %d %v", tc.path, resp.StatusCode, resp.Header)
		}
		kind, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
		if err != nil || kind != "attachment" || !strings.HasPrefix(params["filename"], "conch-backup-") || !strings.HasSuffix(params["filename"], tc.ext) {
			t.Fatalf("GET %s: Content-Disposition %q", tc.path, resp.Header.Get("Content-Disposition"))
		}
		if tc.ext == ".db" && resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Fatalf("Content-Length %q for %d bytes", resp.Header.Get("Content-Length"), len(body))
		}
		file := filepath.Join(t.TempDir(), params["filename"])
		if err := os.WriteFile(file, body, 0o600); err != nil {
			t.Fatal(err)
		}
		if tc.ext == ".db" {
			copied, err := store.Open(file)
			if err != nil {
				t.Fatalf("the snapshot does not open as a store: %v", err)
			}
			got, err := copied.Task(tk.ID)
			copied.Close()
			if err != nil || got.Status != task.Running {
				t.Fatalf("the snapshot's task: %s %v", got.Status, err)
			}
			continue
		}
		fresh := filepath.Join(t.TempDir(), "home")
		res, err := backup.Restore(file, fresh, backup.RestoreOptions{})
		if err != nil || res.Interrupted != 1 || res.Logs != 1 {
			t.Fatalf("restore of the tar: %+v, %v", res, err)
		}
		if b, _ := os.ReadFile(filepath.Join(fresh, "tasks", tk.ID, output.FileName)); !strings.HasPrefix(string(b), "line 1\n") {
			t.Fatalf("restored log %.20q", b)
		}
	}

	// A gateway over a service without a store says so.
	plain := setup(t)
	if resp, body := plain.do(t, req{method: "GET", path: "/api/backup"}); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "Backups are not available here") {
		t.Fatalf("no backups: %d %s", resp.StatusCode, body)
	}
}
