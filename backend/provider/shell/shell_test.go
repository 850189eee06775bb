package shell

import (
	"strings"
	"testing"
)

func TestLastLinesIsBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString("line\n")
	}
	if got := lastLines(b.String()); strings.Count(got, "\n") != summaryLines-1 {
		t.Fatalf("kept %d lines", strings.Count(got, "\n")+1)
	}
	long := strings.Repeat("é", 3000)
	got := lastLines(long)
	if len(got) > summaryBytes || !strings.HasPrefix(got, "é") {
		t.Fatalf("len %d, starts %q", len(got), got[:2])
	}
}

func TestShortenAndTilde(t *testing.T) {
	if got := shorten("make\nmake test"); got != "make …" {
		t.Fatalf("shorten %q", got)
	}
	if got := shorten(strings.Repeat("a", 100)); len([]rune(got)) != 80 {
		t.Fatalf("shorten long: %d runes", len([]rune(got)))
	}
	s := &Shell{Home: "/home/ada"}
	for in, want := range map[string]string{"/home/ada": "~", "/home/ada/proj": "~/proj", "/srv": "/srv", "/home/adam": "/home/adam"} {
		if got := s.tilde(in); got != want {
			t.Errorf("tilde(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplySaysHowTheCommandEnded(t *testing.T) {
	for _, tc := range []struct {
		out    string
		failed bool
		want   string
	}{
		{"hello\n[exit code 0]", false, "```text\nhello\n```"},
		{"[exit code 0, no output]", false, "Done, with no output."},
		{"oops\n\n[exit code 3]", true, "```text\noops\n```\n\nExited with code 3."},
		{"\n[killed by signal 9]", true, "Killed by signal 9."},
		{"half\n[stopped]: context canceled", true, "```text\nhalf\n```\n\nStopped."},
		{"x\n[timed out after 1s]", true, "```text\nx\n```\n\nTimed out after 1s."},
		{"The person declined, so it did not run.", true, "The person declined, so it did not run."},
		{"a ``` fence\n[exit code 0]", false, "````text\na ``` fence\n````"},
	} {
		if got := Reply(tc.out, tc.failed); got != tc.want {
			t.Errorf("Reply(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
	long := strings.Repeat("line\n", 100) + "[exit code 0]"
	if got := Reply(long, false); strings.Count(got, "line\n") != replyLines || !strings.Contains(got, "40 earlier lines") {
		t.Errorf("a long output is not cut to its last %d lines: %q", replyLines, got[:80])
	}
}
