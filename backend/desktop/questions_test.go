package desktop

import (
	"errors"
	"testing"

	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/tray"
)

func TestChatQuestionsListTheChatsThatWait(t *testing.T) {
	got := chatQuestions([]conversation.Conversation{
		{ID: "idle", Title: "Idle"},
		{ID: "c1", Title: "Fix the build", Ask: &ask.Question{ID: "a1", Tool: "run_command", Detail: "Run `rm -rf build`"}},
		{ID: "settled", Title: "Settled", Ask: &ask.Question{ID: "a2", Answer: ask.Allowed}},
		{ID: "c2", Ask: &ask.Question{ID: "a3", Tool: "write_file", Detail: "Write a.md"}},
	})
	want := []tray.Item{
		{TaskID: "c1", Title: "Fix the build", Chat: true, AskID: "a1", Tool: "run_command", Detail: "Run `rm -rf build`"},
		{TaskID: "c2", Title: "New chat", Chat: true, AskID: "a3", Tool: "write_file", Detail: "Write a.md"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAnswerFromTheTrayGoesToTheTaskOrTheChat(t *testing.T) {
	type call struct {
		who, id, askID string
		allow          bool
	}
	var calls []call
	conflict := errors.New("conflict")
	o := Options{
		AnswerTask: func(id, askID string, allow bool) error {
			calls = append(calls, call{"task", id, askID, allow})
			return nil
		},
		AnswerChat: func(id, askID string, allow bool) error {
			calls = append(calls, call{"chat", id, askID, allow})
			return conflict
		},
	}
	if err := o.answer(tray.Item{TaskID: "t1", AskID: "q1"}, true); err != nil {
		t.Fatal(err)
	}
	if err := o.answer(tray.Item{TaskID: "c1", AskID: "q2", Chat: true}, false); !errors.Is(err, conflict) {
		t.Fatalf("the chat's refusal is not passed on: %v", err)
	}
	want := []call{{"task", "t1", "q1", true}, {"chat", "c1", "q2", false}}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Fatalf("calls %+v, want %+v", calls, want)
	}
	if err := (Options{}).answer(tray.Item{TaskID: "t1", AskID: "q1"}, true); !errors.Is(err, errNoAnswer) {
		t.Fatalf("with nothing to answer: %v", err)
	}
}
