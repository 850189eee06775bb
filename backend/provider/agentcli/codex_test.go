package agentcli

import "testing"

func TestACodexPatchReadsAsWhatItTakesOutAndPutsIn(t *testing.T) {
	diff := "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n # Notes\n--- a rule\n+=== a rule\n keep\n@@ -9,2 +9,2 @@\n-old end\n+new end\n\\ No newline at end of file\n"
	w := codexWrite("notes.md", "update", diff)
	if w == nil || w.Whole || w.Old != "# Notes\n-- a rule\nkeep\n…\nold end\n" || w.New != "# Notes\n=== a rule\nkeep\n…\nnew end\n" {
		t.Fatalf("update: %+v", w)
	}
	if w := codexWrite("n.md", "add", "hello\n"); w == nil || !w.Whole || w.New != "hello\n" {
		t.Fatalf("add: %+v", w)
	}
	if w := codexWrite("n.md", "delete", "bye\n"); w == nil || w.Old != "bye\n" || w.New != "" || w.Whole {
		t.Fatalf("delete: %+v", w)
	}
	if w := codexWrite("n.md", "rename", ""); w != nil {
		t.Fatalf("an unknown kind: %+v", w)
	}
}
