package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/task"
	"conch/backend/taskrun"
)

// conch runs the binary with args and returns its exit code and output.
func conch(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// `conch backup` while a `conch serve` runs twenty tasks on the home: the
// running Conch hands the backup over, the tasks carry on, `conch restore`
// refuses the running home and restores into a fresh one, and a Conch on
// that one has every task, none running, each log back.
func TestBackupWhileTwentyTasksRunThenRestoreIntoAFreshHome(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	s := start(t, home)
	if code := s.call(t, "PATCH", "/api/preferences", `{"limits":{"background":20,"helper":4}}`, nil); code != 200 {
		t.Fatalf("raise the limit: %d", code)
	}
	var ids []string
	for i := range 20 {
		tk := s.create(t, fmt.Sprintf(`for i in $(seq 1 100000); do echo "task %d line $i"; sleep 0.02; done`, i), work)
		ids = append(ids, tk.ID)
	}
	for _, id := range ids {
		s.waitTask(t, id, func(t task.Task) bool { return t.Status == task.Running && t.OutputBytes > 0 })
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "conch.tar")
	code, out := conch(t, "backup", file, "--with-output", "--home", home)
	if code != 0 || !strings.Contains(out, "Asked the running Conch at "+s.base) || !strings.Contains(out, "20 tasks") || !strings.Contains(out, "20 output logs") {
		t.Fatalf("conch backup = %d\n%s", code, out)
	}
	plain := filepath.Join(dir, "conch.db")
	if code, out := conch(t, "backup", plain, "--home", home); code != 0 {
		t.Fatalf("conch backup (the store alone) = %d\n%s", code, out)
	}
	for _, id := range ids {
		var tk task.Task
		s.call(t, "GET", "/api/tasks/"+id, "", &tk)
		if tk.Status != task.Running {
			t.Fatalf("task %s is %s after the backups", id, tk.Status)
		}
	}

	code, out = conch(t, "restore", file, "--home", home, "--replace")
	if code != 1 || !strings.Contains(out, "in use by another Conch") {
		t.Fatalf("conch restore into the running home = %d\n%s", code, out)
	}
	if !s.up(t) {
		t.Fatal("the running Conch went down")
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	code, out = conch(t, "restore", file, "--home", fresh)
	if code != 0 || !strings.Contains(out, "20 tasks") || !strings.Contains(out, "20 tasks were running when the backup was taken") {
		t.Fatalf("conch restore = %d\n%s", code, out)
	}
	s2 := start(t, fresh)
	var list struct {
		Tasks []task.Task `json:"tasks"`
	}
	if code := s2.call(t, "GET", "/api/tasks", "", &list); code != 200 || len(list.Tasks) != 20 {
		t.Fatalf("the restored Conch lists %d tasks (%d)", len(list.Tasks), code)
	}
	for _, tk := range list.Tasks {
		if tk.Status != task.Interrupted || tk.Error != taskrun.InterruptedReason || tk.OutputBytes == 0 {
			t.Errorf("task %s came back %s %q with %d bytes", tk.ID, tk.Status, tk.Error, tk.OutputBytes)
		}
	}
	var log string
	if code := s2.call(t, "GET", "/api/tasks/"+ids[0]+"/output", "", &log); code != 200 || !strings.HasPrefix(log, "task 0 line 1\n") {
		t.Fatalf("restored output: %d %.30q", code, log)
	}

	// The store alone restores too, without the logs.
	other := filepath.Join(t.TempDir(), "other")
	if code, out := conch(t, "restore", plain, "--home", other); code != 0 || !strings.Contains(out, "20 tasks") {
		t.Fatalf("conch restore of the store alone = %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(other, "conch.db")); err != nil {
		t.Fatal(err)
	}
}
