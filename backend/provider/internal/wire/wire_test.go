package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/internal/sse"
)

func TestWordsReadAsSentences(t *testing.T) {
	for in, want := range map[string]string{"slow down": "slow down.", "Done.": "Done.", "why?": "why?", "(x)": "(x)", "cut…": "cut…", "  ": ""} {
		if got := Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Says(429, ""); got != "Too Many Requests." {
		t.Errorf("Says without a message: %q", got)
	}
	if got := Says(0, ""); got != "no reason given." {
		t.Errorf("Says with nothing at all: %q", got)
	}
	if got := Shorten("€€€", 4); got != "€…" {
		t.Errorf("Shorten cut a character: %q", got)
	}
	for d, want := range map[time.Duration]string{0: "a moment", 1500 * time.Millisecond: "2s", 6 * time.Minute: "6m0s"} {
		if got := WaitText(d); got != want {
			t.Errorf("WaitText(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	h := http.Header{}
	if !RetryAfter(h, now).IsZero() {
		t.Fatal("no header, yet a time")
	}
	h.Set("Retry-After", "30")
	if got := RetryAfter(h, now); !got.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("seconds: %v", got)
	}
	h.Set("Retry-After", now.Add(time.Hour).Format(http.TimeFormat))
	if got := RetryAfter(h, now); !got.Equal(now.Add(time.Hour)) {
		t.Fatalf("a date: %v", got)
	}
	h.Set("Retry-After", "soon")
	if !RetryAfter(h, now).IsZero() {
		t.Fatal("nonsense read as a time")
	}
}

func TestEndedSaysHowAStreamBrokeOff(t *testing.T) {
	for err, want := range map[error]string{
		io.ErrUnexpectedEOF:                        "The reply from X ended before it was complete.",
		fmt.Errorf("read: %w", sse.ErrLineTooLong): "X sent a line longer than 16 MiB; Conch stopped reading.",
		errors.New("reset by peer"):                "The reply from X broke off: reset by peer.",
	} {
		ev := Ended("X", err)
		if ev.Kind != provider.ErrorEvent || ev.Err.Error() != want || !errors.Is(ev.Err, provider.ErrProtocol) {
			t.Errorf("Ended(%v) = %+v, want %q", err, ev, want)
		}
	}
}

func TestNetErrorSaysWhoDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := Client{Name: "Local", BaseURL: "http://" + addr, HTTP: &http.Client{}, Header: func(*http.Request) {}, Refused: "is Local running?"}
	_, _, _, err = c.Get(context.Background(), "/models")
	if !errors.Is(err, provider.ErrNotReady) || !strings.Contains(err.Error(), "Nothing answers at http://"+addr+": is Local running?") {
		t.Fatalf("refused: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.NetError(ctx, errors.New("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request: %v", err)
	}
}

func TestModelIDs(t *testing.T) {
	got, err := ModelIDs([]byte(`{"data":[{"id":"a"},{"id":""},{"id":"b"}]}`))
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ModelIDs([]byte(`[`)); err == nil {
		t.Fatal("broken JSON read as a list")
	}
}
