package conversation

import (
	"conch/backend/ask"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestJSONRoundTripIsCamelCase keeps one casing in the records clients read.
func TestJSONRoundTripIsCamelCase(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	q := &ask.Question{ID: "q", CallID: "c", Tool: "write_file", Detail: "Write a.txt", AskedAt: at, ExpiresAt: at.Add(time.Hour)}
	c := Conversation{ID: "x", Title: "t", Origin: Origin{Kind: FromTask, TaskID: "t1"}, Provider: "p", Model: "m",
		Mode: "ask", Cwd: "/w", Tainted: true, Spent: 0.5, Limit: 2, Running: true, Ask: q, LastSeq: 4, CreatedAt: at, UpdatedAt: at, Rev: 3}
	m := Message{ID: "m", ConversationID: "x", Seq: 4, Kind: ToolCallKind, Text: "t",
		ToolCall:   &ToolCall{ID: "c", Name: "n", Arguments: json.RawMessage(`{"a":1}`), Effect: "edit", Title: "T"},
		ToolResult: &ToolResult{CallID: "c", Name: "n", Output: "o", IsError: true}, Ask: q, CreatedAt: at}
	for _, v := range []any{&c, &m} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`"ID"`, `"Seq"`, `"call_id"`, `"CallID"`, `"conversation_id"`} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s holds %s", b, bad)
			}
		}
		back := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := json.Unmarshal(b, back); err != nil || !reflect.DeepEqual(back, v) {
			t.Errorf("round trip of %s: %+v, %v", b, back, err)
		}
	}
}
