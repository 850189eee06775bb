//go:build linux

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"conch/backend/host"
	"conch/backend/hostlink"
	"conch/backend/task"
	"conch/backend/testrig/sshd"
)

// hostBuilds is a folder of runner builds holding the conch under test
// for this computer's arch (the host is this computer too).
func hostBuilds(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	name := "conch-linux-" + runtime.GOARCH
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if err := os.WriteFile(filepath.Join(dir, name+".sha256"), []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A command on a host that finishes while no Conch is running is told
// once: the next Conch follows it again, finds it done there, and raises
// one notification for it; the Conch after that raises none.
func TestAFinishOnAHostWhileAwayIsNotifiedOnce(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	notes := startNotifyd(t)
	env := []string{"DBUS_SESSION_BUS_ADDRESS=" + notes.addr, hostlink.BuildsEnv + "=" + hostBuilds(t), "DISPLAY=", "WAYLAND_DISPLAY="}
	home := t.TempDir()
	srv := startWith(t, home, env)
	if code := srv.call(t, "PATCH", "/api/preferences", fmt.Sprintf(`{"sshConfig":%q}`, s.Config), nil); code != 200 {
		t.Fatalf("set the ssh config: %d", code)
	}
	if code := srv.call(t, "PUT", "/api/hosts/box", fmt.Sprintf(`{"target":%q}`, s.Alias), nil); code != 201 {
		t.Fatalf("add the host: %d", code)
	}
	var tr host.TestResult
	srv.call(t, "POST", "/api/hosts/box/test", "", &tr)
	srv.call(t, "POST", "/api/hosts/box/accept-key", fmt.Sprintf(`{"fingerprint":%q}`, tr.Host.Fingerprint), nil)
	marker := filepath.Join(s.Home, "finished")
	var tk task.Task
	body, _ := json.Marshal(map[string]any{"text": "echo started there; sleep 3; touch " + marker + "; echo finished there", "options": map[string]string{"host": "box", "mode": "auto"}})
	if code := srv.call(t, "POST", "/api/tasks", string(body), &tk); code != 201 {
		t.Fatalf("send the command: %d", code)
	}
	// Its first line here says it runs there.
	srv.waitTask(t, tk.ID, func(t task.Task) bool { return t.OutputBytes > 0 })
	// Killed while it runs there; it finishes there alone.
	srv.kill9(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never finished on the host")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if n := notes.finishes()["task-"+tk.ID]; n != 0 {
		t.Fatalf("%d finish notifications before any Conch saw it finish", n)
	}
	srv = startWith(t, home, env)
	done := srv.waitTask(t, tk.ID, func(t task.Task) bool { return t.Status.Finished() })
	if done.Status != task.Done || !done.Notified {
		t.Fatalf("after the restart it is %s (notified %v): %s", done.Status, done.Notified, done.Error)
	}
	waitNotes := time.Now().Add(10 * time.Second)
	for notes.finishes()["task-"+tk.ID] < 1 && time.Now().Before(waitNotes) {
		time.Sleep(50 * time.Millisecond)
	}
	srv.kill9(t)
	srv = startWith(t, home, env)
	var out string
	srv.call(t, "GET", "/api/tasks/"+tk.ID+"/output", "", &out)
	if !strings.Contains(out, "finished there") {
		t.Errorf("its output here: %q", out)
	}
	time.Sleep(time.Second) // a second notification would come now, if ever
	if n := notes.finishes()["task-"+tk.ID]; n != 1 {
		t.Fatalf("%d finish notifications for the finish that happened while away, want 1 (all: %v)", n, notes.finishes())
	}
}
