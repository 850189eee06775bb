package ask

import (
	"reflect"
	"strings"
	"testing"
)

// The cases of frontend/src/lib/approvals/danger.test.ts: the tray and the
// page warn about the same commands.

func run(command string) (tool, detail string) {
	return "run_command", "Run `" + command + "` in /home/me/proj"
}

func TestDangerWarns(t *testing.T) {
	cases := []struct{ cmd, said string }{
		{"rm -rf build", "rm -r"},
		{"rm -fr ./dist", "rm -r"},
		{"rm -r -f node_modules", "rm -r"},
		{"rm --recursive out", "rm -r"},
		{"sudo rm -Rf /var/tmp/x", "rm -r"},
		{"cd out && rm -rf *", "rm -r"},
		{`find . -name "*.o" | xargs rm -rf`, "rm -r"},
		{"rsync -a --delete src/ host:dst/", "--delete"},
		{`find . -name "*.tmp" -delete`, "--delete"},
		{"git push --force origin main", "force-push"},
		{"git push -f", "force-push"},
		{"git push --force-with-lease", "force-push"},
		{"git push origin +main", "force-push"},
		{"git push origin --delete feature", "--delete"},
		{"git push origin :old-branch", "deletes a branch"},
		{"git reset --hard HEAD~3", "reset --hard"},
		{"git clean -fdx", "git clean"},
		{"git branch -D wip", "not merged"},
		{"mkfs.ext4 /dev/sdb1", "wipes"},
		{"dd if=/dev/zero of=/dev/sda", "dd of="},
	}
	for _, c := range cases {
		if got := Danger(run(c.cmd)); !strings.Contains(got, c.said) {
			t.Errorf("Danger(%q) = %q, want it to say %q", c.cmd, got, c.said)
		}
	}
}

func TestDangerLetsOrdinaryCommandsBe(t *testing.T) {
	for _, cmd := range []string{
		"ls -la",
		"rm notes.txt",
		"npm test",
		"git push origin main",
		"git status",
		`echo "rm -rf /"`,
		`grep -r "force" .`,
		"git log --format=%H -- src/rm",
		"git checkout -- file.txt",
		"cp -rf a b",
	} {
		if got := Danger(run(cmd)); got != "" {
			t.Errorf("Danger(%q) = %q, want no warning", cmd, got)
		}
	}
}

func TestDangerReadsAgentQuestionsNotFileWrites(t *testing.T) {
	if got := Danger("Bash", "Run `rm -rf ~/.cache/x`?"); !strings.Contains(got, "rm -r") {
		t.Errorf("a coding agent's question: %q", got)
	}
	if got := Danger("write_file", "Write README.md"); got != "" {
		t.Errorf("a file write: %q", got)
	}
	if got := Danger("run_command", "git push --force"); !strings.Contains(got, "force-push") {
		t.Errorf("a command tool's whole detail: %q", got)
	}
}

func TestCommandOf(t *testing.T) {
	if got := commandOf(run("make")); got != "make" {
		t.Errorf("between backticks: %q", got)
	}
	if got := commandOf("run_command", "make all"); got != "make all" {
		t.Errorf("a command tool's detail: %q", got)
	}
	if got := commandOf("edit_file", "Edit a.go"); got != "" {
		t.Errorf("not a command: %q", got)
	}
}

func TestSimpleCommandsSplitAtOperatorsAndKeepQuotedWordsWhole(t *testing.T) {
	got := simpleCommands(`echo 'a; b' && rm -rf "my dir" | cat`)
	want := [][]string{{"echo", "a; b"}, {"rm", "-rf", "my dir"}, {"cat"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
