package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"conch/backend/provider"
)

// A cut-off call's result carries what it had printed: the text after its
// own "$ command" line in the task's log (the last such line), only the
// end of a long output, the log's end when its start was not kept, and
// nothing for a call that is not a command.
func TestCutOffCarriesWhatTheCallPrinted(t *testing.T) {
	run := func(command string) provider.ToolCall {
		args, _ := json.Marshal(map[string]string{"command": command})
		return provider.ToolCall{ID: "c", Name: "run_command", Arguments: args}
	}
	long := strings.Repeat("0123456789abcdef\n", 2000) + "the-last-line"
	for _, c := range []struct {
		name, left string
		call       provider.ToolCall
		want, not  []string
	}{
		{"its own lines", "\n$ make\nold run\n\n$ ls\nx\n\n$ make\nbuilding\n", run("make"),
			[]string{cutOffText + "\nbuilding"}, []string{"old run", "x\n"}},
		{"printed nothing", "\n$ ls\nx\n\n$ make\n", run("make"), []string{cutOffText + " nothing was captured."}, nil},
		{"a long output's end", "\n$ make\n" + long, run("make"),
			[]string{"the-last-line", "bytes before this)\n"}, []string{"\n$ make"}},
		{"its start not kept", long, run("make"),
			[]string{"the end of the task's log", "the-last-line"}, nil},
		{"no command", "\n$ make\nbuilding\n", provider.ToolCall{ID: "c", Name: "write_file", Arguments: json.RawMessage(`{}`)},
			[]string{cutOffText + " nothing was captured."}, []string{"building"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := cutOff(c.call, c.left)
			if !res.IsError || res.CallID != "c" {
				t.Errorf("result %+v", res)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("lacks %q:\n%s", w, res.Output)
				}
			}
			for _, n := range c.not {
				if strings.Contains(res.Output, n) {
					t.Errorf("holds %q:\n%s", n, res.Output)
				}
			}
			if len(res.Output) > maxCutOffOutput+200 {
				t.Errorf("%d bytes", len(res.Output))
			}
		})
	}
}
