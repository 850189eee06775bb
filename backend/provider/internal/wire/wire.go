// Package wire is what the model APIs (OpenAI-compatible and Anthropic)
// share to talk HTTP: making the request, reading an error answer, turning
// a request that got no answer into a sentence, streaming the reply through
// a decoder, and the words every provider error uses. Each API keeps only
// its own paths, headers, error objects and decoder.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"conch/backend/provider"
	"conch/backend/provider/internal/sse"
)

// InfoTimeout bounds the probe behind a provider's Info (its models).
const InfoTimeout = 5 * time.Second

// maxBody bounds an error answer or a model list read whole.
const (
	maxErrorBody = 64 << 10
	maxListBody  = 8 << 20
)

// Client makes one API's requests.
type Client struct {
	// Name is the provider as the person calls it, in every message.
	Name    string
	BaseURL string
	HTTP    *http.Client
	// Header signs a request (a key) and says which API version it speaks.
	Header func(*http.Request)
	// Classify turns an error answer (status 0 for an error inside the
	// stream) into an error that wraps the right provider sentinel.
	Classify func(status int, h http.Header, body []byte) error
	// Refused and Unfound end the sentences for a refused connection and a
	// name that does not resolve ("is Ollama running?").
	Refused, Unfound string
}

// Get fetches path (after BaseURL) within InfoTimeout and reads the whole
// body. A request that got no answer is NetError's sentence; any status is
// returned for the caller to judge.
func (c Client) Get(ctx context.Context, path string) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, InfoTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("ask %s: %w", c.Name, err)
	}
	c.Header(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, nil, c.NetError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListBody))
	if err != nil {
		return 0, nil, nil, c.NetError(ctx, err)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// Decode reads a successful answer and sends its events; it returns the
// last event (done, or an error).
type Decode func(resp *http.Response, send func(provider.Event) bool) provider.Event

// Stream posts body to path and streams the answer through decode. The
// channel closes after the last event; every failure after the request is
// made, HTTP errors included, arrives as that last event, and a reader
// that leaves never holds the goroutine.
func (c Client) Stream(ctx context.Context, path string, body []byte, decode Decode) <-chan provider.Event {
	ch := make(chan provider.Event, 32)
	go func() {
		defer close(ch)
		out := sse.Emitter{Ctx: ctx, Ch: ch}
		final := c.post(ctx, path, body, decode, out)
		if ctx.Err() != nil {
			final = ErrorEvent(c.Stopped(ctx))
		}
		out.Final(final)
	}()
	return ch
}

func (c Client) post(ctx context.Context, path string, body []byte, decode Decode, out sse.Emitter) provider.Event {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return ErrorEvent(fmt.Errorf("call %s: %w", c.Name, err))
	}
	c.Header(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return ErrorEvent(c.NetError(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return ErrorEvent(c.Classify(resp.StatusCode, resp.Header, msg))
	}
	return decode(resp, out.Send)
}

// ErrorEvent is the last event of a stream that failed with err.
func ErrorEvent(err error) provider.Event {
	return provider.Event{Kind: provider.ErrorEvent, Err: err}
}

// NetError explains a request that got no answer.
func (c Client) NetError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return c.Stopped(ctx)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Errorf(provider.ErrNotReady, "Nothing answers at %s: %s", c.BaseURL, c.Refused)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return Errorf(provider.ErrNotReady, "Could not find %s (%s): %s", c.BaseURL, dns.Err, c.Unfound)
	}
	return Errorf(provider.ErrNotReady, "Could not reach %s at %s: %v.", c.Name, c.BaseURL, unwrap(err))
}

// Stopped is the error of a request whose ctx ended.
func (c Client) Stopped(ctx context.Context) error {
	return fmt.Errorf("stopped the request to %s: %w", c.Name, context.Cause(ctx))
}

func unwrap(err error) error {
	if u, ok := err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return err
}

// Ended is the last event of a stream that broke off before its end: cut
// off, a line too long, or another read error.
func Ended(name string, err error) provider.Event {
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return ErrorEvent(Errorf(provider.ErrProtocol, "The reply from %s ended before it was complete.", name))
	case errors.Is(err, sse.ErrLineTooLong):
		return ErrorEvent(Errorf(provider.ErrProtocol, "%s sent a line longer than 16 MiB; Conch stopped reading.", name))
	}
	return ErrorEvent(Errorf(provider.ErrProtocol, "The reply from %s broke off: %v.", name, err))
}

// ErrStopped ends a decode whose reader went away; Stream replaces it with
// the context's error.
var ErrStopped = errors.New("stream stopped")

// wireError is a sentence for a person that still answers errors.Is for
// one of provider's sentinel errors.
type wireError struct {
	msg  string
	kind error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.kind }

// Errorf is a sentence that wraps kind (provider.ErrAuth, ErrOverload…).
func Errorf(kind error, format string, args ...any) error {
	return &wireError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// Says is what a server's error message becomes in a sentence: the
// message, else the status's text, ending in a full stop.
func Says(status int, msg string) string {
	if msg == "" {
		if status > 0 {
			msg = http.StatusText(status)
		} else {
			msg = "no reason given"
		}
	}
	return Sentence(msg)
}

// Sentence ends s with a full stop unless it already ends a sentence.
func Sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	switch s[len(s)-1] {
	case '.', '!', '?', ')':
		return s
	}
	if strings.HasSuffix(s, "…") {
		return s
	}
	return s + "."
}

// Shorten keeps s to about n bytes for an error message.
func Shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// WaitText says how long to wait in a person's terms ("2s", "6m0s").
func WaitText(d time.Duration) string {
	if d < time.Second {
		return "a moment"
	}
	// Round up: a wait read a moment after the header was written is a
	// hair short of it.
	return ((d + time.Second - 1) / time.Second * time.Second).String()
}

// RetryAfter is when a Retry-After header (seconds or an HTTP date) says
// to try again; zero when it says nothing.
func RetryAfter(h http.Header, now time.Time) time.Time {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return time.Time{}
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return now.Add(time.Duration(s * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		return t
	}
	return time.Time{}
}

// Limited is the error of a 429 (or a rate-limit error object): a limit
// that waiting lifts (ErrOverload, saying when the headers tell), since a
// quota or spend limit is the caller's own LimitError.
func Limited(name, code, says, msg string, until time.Time) error {
	if !until.IsZero() && !strings.Contains(strings.ToLower(msg), "try again") {
		return Errorf(provider.ErrOverload, "%s is limiting how fast it is asked%s: %s Try again in %s.", name, code, says, WaitText(time.Until(until)))
	}
	return Errorf(provider.ErrOverload, "%s is limiting how fast it is asked%s: %s", name, code, says)
}

// Rejected is the error of an answer no case of the API's knew: the
// server said no, for its own reason.
func Rejected(name, code, says string, status int) error {
	if status > 0 {
		return fmt.Errorf("%s rejected the request%s: %s", name, code, says)
	}
	return fmt.Errorf("%s says: %s", name, says)
}

// Code is " (429)" for a status, "" for none (an error in the stream).
func Code(status int) string {
	if status > 0 {
		return fmt.Sprintf(" (%d)", status)
	}
	return ""
}

// ModelIDs reads the {"data":[{"id"}]} model list both APIs answer with.
func ModelIDs(body []byte) ([]string, error) {
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	list := make([]string, 0, len(out.Data))
	for _, m := range out.Data {
		if m.ID != "" {
			list = append(list, m.ID)
		}
	}
	return list, nil
}
