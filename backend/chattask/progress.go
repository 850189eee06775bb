package chattask

import (
	"strings"

	"conch/backend/chat"
)

// progressOf turns what a task's chat does into its task's progress: what
// it is doing now (current) and what it did (a step, past tense).
func progressOf(progress func(current, step string)) func(chat.Progress) {
	return func(p chat.Progress) {
		switch p.Kind {
		case chat.Thinking:
			progress("Thinking", "")
		case chat.Calling:
			progress(present(p.Text), "")
		case chat.Called:
			progress("", past(p.Text))
		case chat.Waiting:
			progress(p.Text, "")
		default:
			progress("", p.Text)
		}
	}
}

// verbs turn a call's title ("Run go test") into what a task is doing now
// and, once done, what it did.
var verbs = []struct{ do, doing, did string }{
	{"Run ", "Running ", "Ran "},
	{"Read ", "Reading ", "Read "},
	{"List ", "Listing ", "Listed "},
	{"Write ", "Writing ", "Wrote "},
	{"Edit ", "Editing ", "Edited "},
	{"Fetch ", "Fetching ", "Fetched "},
	{"Searched for ", "Searching for ", "Searched for "},
}

func present(title string) string {
	for _, v := range verbs {
		if rest, ok := strings.CutPrefix(title, v.do); ok {
			return v.doing + rest
		}
	}
	return title
}

func past(title string) string {
	for _, v := range verbs {
		if rest, ok := strings.CutPrefix(title, v.do); ok {
			return v.did + rest
		}
	}
	return title
}
