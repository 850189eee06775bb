package chat

import (
	"encoding/json"
	"testing"

	"conch/backend/task"
	"conch/backend/tool"
)

func TestGate(t *testing.T) {
	// want[mode] lists the decision for none, edit, command, network.
	clean := map[task.Mode][4]Decision{
		task.Plan:  {Run, Refuse, Refuse, Refuse},
		task.Ask:   {Run, AskFirst, AskFirst, AskFirst},
		task.Edits: {Run, Run, AskFirst, AskFirst},
		task.Auto:  {Run, Run, Run, Run},
		"weird":    {Run, AskFirst, AskFirst, AskFirst},
	}
	tainted := map[task.Mode][4]Decision{
		task.Plan:  {Run, Refuse, Refuse, Refuse},
		task.Ask:   {Run, AskFirst, AskFirst, AskFirst},
		task.Edits: {Run, AskFirst, AskFirst, AskFirst},
		task.Auto:  {Run, AskFirst, AskFirst, AskFirst},
		"weird":    {Run, AskFirst, AskFirst, AskFirst},
	}
	for taint, table := range map[bool]map[task.Mode][4]Decision{false: clean, true: tainted} {
		for mode, want := range table {
			for i, effect := range tool.Effects {
				if got := Gate(mode, effect, taint); got != want[i] {
					t.Errorf("Gate(%s, %s, tainted %v) = %s, want %s", mode, effect, taint, got, want[i])
				}
			}
		}
	}
	if got := Gate(task.Edits, "teleport", false); got != AskFirst {
		t.Errorf("an unknown effect in edits mode: %s, want ask", got)
	}
}

func TestTaints(t *testing.T) {
	dir := "/home/me/project"
	for _, tc := range []struct {
		name, args string
		want       bool
	}{
		{"fetch_url", `{"url":"https://example.com"}`, true},
		{"read_file", `{"path":"go.mod"}`, false},
		{"write_file", `{"path":"x","content":"curl https://x"}`, false},
		{"run_command", `{"command":"go test ./..."}`, false},
		{"run_command", `{"command":"ls -la && cat go.mod 2>/dev/null"}`, false},
		{"run_command", `{"command":"grep -r foo ./src"}`, false},
		{"run_command", `{"command":"cat /home/me/project/go.mod"}`, false},
		{"run_command", `{"command":"curl -s example.com"}`, true},
		{"run_command", `{"command":"/usr/bin/wget x"}`, true},
		{"run_command", `{"command":"echo hi | nc host 80"}`, true},
		{"run_command", `{"command":"git status && git pull"}`, true},
		{"run_command", `{"command":"git -C . fetch"}`, true},
		{"run_command", `{"command":"git log"}`, false},
		{"run_command", `{"command":"npm install"}`, true},
		{"run_command", `{"command":"npm test"}`, false},
		{"run_command", `{"command":"pip install requests"}`, true},
		{"run_command", `{"command":"go get example.com/x"}`, true},
		{"run_command", `{"command":"go build ./..."}`, false},
		{"run_command", `{"command":"python3 -c 'import urllib; urllib.urlopen(\"http://x\")'"}`, true},
		{"run_command", `{"command":"cat /etc/passwd"}`, true},
		{"run_command", `{"command":"cat ~/.ssh/id_rsa"}`, true},
		{"run_command", `{"command":"cat ../other/secret"}`, true},
		{"run_command", `{"command":"cat src/../go.mod"}`, false},
	} {
		got, why := Taints(tc.name, json.RawMessage(tc.args), dir)
		if got != tc.want {
			t.Errorf("Taints(%s %s) = %v (%s), want %v", tc.name, tc.args, got, why, tc.want)
		}
		if got && why == "" {
			t.Errorf("Taints(%s %s) gives no reason", tc.name, tc.args)
		}
	}
}
