package chat

import (
	"conch/backend/provider"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestAskChangeShowsWhatAWriteOrAnEditChanges(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := askChange("write_file", json.RawMessage(`{"path":"README.md","content":"# New\n"}`), dir)
	if c == nil || c.Path != "README.md" || c.Before != "# Old\n" || c.After != "# New\n" || c.New {
		t.Fatalf("write over a file: %+v", c)
	}
	c = askChange("write_file", json.RawMessage(`{"path":"docs/new.md","content":"hi"}`), dir)
	if c == nil || !c.New || c.Before != "" || c.After != "hi" {
		t.Fatalf("write a new file: %+v", c)
	}
	c = askChange("edit_file", json.RawMessage(`{"path":"README.md","old":"Old","new":"New"}`), dir)
	if c == nil || c.Before != "Old" || c.After != "New" {
		t.Fatalf("edit: %+v", c)
	}
	for _, tc := range []struct{ name, args string }{
		{"run_command", `{"command":"rm -rf /"}`},
		{"write_file", `{"path":"../outside.txt","content":"x"}`},
		{"write_file", `not json`},
	} {
		if c := askChange(tc.name, json.RawMessage(tc.args), dir); c != nil {
			t.Errorf("%s %s: change %+v, want none", tc.name, tc.args, c)
		}
	}
}

func TestAgentChangeReadsWhatAWholeWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := agentChange(&provider.Write{Path: "go.mod", New: "module new\n", Whole: true}, dir)
	if c == nil || c.Before != "module old\n" || c.After != "module new\n" || c.New {
		t.Fatalf("a whole write over a file: %+v", c)
	}
	c = agentChange(&provider.Write{Path: "docs/fresh.md", New: "hi", Whole: true}, dir)
	if c == nil || !c.New || c.Before != "" {
		t.Fatalf("a whole write of a new file: %+v", c)
	}
	c = agentChange(&provider.Write{Path: "go.mod", Old: "old", New: "new"}, dir)
	if c == nil || c.Before != "old" || c.After != "new" {
		t.Fatalf("a piece: %+v", c)
	}
	for _, w := range []*provider.Write{nil, {Path: ""}, {Path: "../outside", New: "x", Whole: true}} {
		if c := agentChange(w, dir); c != nil {
			t.Errorf("%+v: change %+v, want none", w, c)
		}
	}
}
