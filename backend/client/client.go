// Package client talks to a running Conch (the window or `conch serve`)
// over its gateway, the way a terminal command does: it finds where that
// Conch serves and its sign-in token in the home folder, and sends API
// requests with them. `conch backup`, `conch doctor` and the verbs that
// drive a running Conch (`conch tasks`, `conch run`…) all use it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"conch/backend/errcode"
)

// URLFile and TokenFile are the files inside the home in which a running
// Conch says where its gateway serves and with which sign-in token.
const (
	URLFile   = "gateway-url"
	TokenFile = "gateway-token"
)

// ErrNotRunning is returned when no Conch answers on the home: it says
// nowhere where it serves, or nothing answers where it said it did (a
// Conch that died leaves its address behind).
var ErrNotRunning = errors.New("no Conch is running")

// Client sends requests to the Conch serving from one home.
type Client struct {
	// Base is where it serves (http://127.0.0.1:PORT).
	Base  string
	home  string
	token string
	http  *http.Client
}

// Dial reads where the Conch on home serves and its token. It sends
// nothing: a Conch that died is found out by the first request.
func Dial(home string) (*Client, error) {
	b, err := os.ReadFile(filepath.Join(home, URLFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w on %s", ErrNotRunning, home)
	}
	if err != nil {
		return nil, fmt.Errorf("read where Conch serves: %w", err)
	}
	token, err := os.ReadFile(filepath.Join(home, TokenFile))
	if err != nil {
		return nil, fmt.Errorf("read the sign-in token: %w", err)
	}
	return &Client{
		Base: strings.TrimSpace(string(b)), home: home, token: strings.TrimSpace(string(token)),
		// No overall timeout: a backup or a long read takes its time. A
		// Conch that does not answer at all is given up on soon.
		http: &http.Client{Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			ResponseHeaderTimeout: 30 * time.Second,
		}},
	}, nil
}

// Error is an answer of the API's other than 2xx: its status, and the code
// and sentence of its error body.
type Error struct {
	Status  int
	Code    errcode.Code
	Message string
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("Conch answered %d %s", e.Status, http.StatusText(e.Status))
}

// Send sends method path with in as its JSON body (none when nil) and
// returns the answer, whose body the caller closes. An answer other than
// 2xx is an *Error; a Conch that does not answer is ErrNotRunning.
func (c *Client) Send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w on %s (nothing answers at %s)", ErrNotRunning, c.home, c.Base)
		}
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := &Error{Status: resp.StatusCode}
		var eb errcode.Body
		if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&eb) == nil {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		}
		return nil, e
	}
	return resp, nil
}

// Do is Send with the answer's JSON decoded into out (ignored when nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.Send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read Conch's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// Output reads a task's output from offset: the bytes, and the offset
// the next read starts at (offset itself when there is nothing new).
func (c *Client) Output(ctx context.Context, id string, offset int64) ([]byte, int64, error) {
	resp, err := c.Send(ctx, http.MethodGet, fmt.Sprintf("/api/tasks/%s/output?offset=%d", url.PathEscape(id), offset), nil)
	if err != nil {
		return nil, offset, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, offset, fmt.Errorf("read task %s's output: %w", id, err)
	}
	var next int64
	if _, err := fmt.Sscan(resp.Header.Get("X-Next-Offset"), &next); err != nil {
		return nil, offset, fmt.Errorf("read task %s's output: no X-Next-Offset", id)
	}
	return b, next, nil
}

// StreamOutput follows a task's output from offset as it is written
// (GET /api/tasks/:id/output?follow=1), handing each piece to fn with the
// offset it starts at, until the task has ended with every byte sent (nil)
// or the stream breaks (its error).
func (c *Client) StreamOutput(ctx context.Context, id string, offset int64, fn func(from int64, b []byte)) error {
	resp, err := c.Send(ctx, http.MethodGet, fmt.Sprintf("/api/tasks/%s/output?follow=1&offset=%d", url.PathEscape(id), offset), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			b := make([]byte, n)
			copy(b, buf[:n])
			fn(offset, b)
			offset += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow task %s's output: %w", id, err)
		}
	}
}
