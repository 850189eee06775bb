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
