package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"conch/backend/provider"
)

// newCodexSession is the session of one turn of req, its maps made.
func newCodexSession(req provider.Request) *codexSession {
	return &codexSession{req: req, turnDone: make(chan codexTurn, 1), completedOne: make(chan struct{}, 1),
		items: map[string]codexItem{}, asked: map[string]string{}, allowed: map[string]bool{}, settled: map[string]bool{}}
}

// codexSession is one turn of one thread.
type codexSession struct {
	req     provider.Request
	sandbox string
	model   string
	srv     *askServer
	e       emitter

	turnDone     chan codexTurn
	completedOne chan struct{} // a token at each item/completed, for settle

	mu       sync.Mutex
	items    map[string]codexItem // started items by id, for their approvals
	order    []string             // their ids, in the order they started
	lastText string               // the agent message text came from last
	wrote    bool
	asked    map[string]string // what the gate was asked, by item
	allowed  map[string]bool   // the items the gate allowed, by id
	settled  map[string]bool   // the items settle showed as done, by id
}

// codexTurn is a finished turn.
type codexTurn struct {
	Status string     `json:"status"`
	Error  *codexFail `json:"error"`
}

// codexFail is codex's account of a failure: a turn's, or one it retries.
type codexFail struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails string          `json:"additionalDetails"`
}

// drive runs the turn: the handshake, an ephemeral thread, one turn of
// the conversation, and its end, once the items it left open settle.
func (s *codexSession) drive(ctx context.Context, r *rpcRun) (string, error) {
	defer s.srv.Close()
	if err := codexHello(ctx, r); err != nil {
		return "", err
	}
	thread, err := s.startThread(ctx, r)
	if err != nil {
		return "", err
	}
	text := prompt(provider.Request{Messages: s.req.Messages})
	input := []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}
	if err := r.call(ctx, "turn/start", map[string]any{"threadId": thread, "input": input}, nil); err != nil {
		return "", codexCallError(err)
	}
	var turn codexTurn
	select {
	case turn = <-s.turnDone:
	case <-ctx.Done():
		if r.p.isExited() {
			return "", errExited
		}
		return "", context.Cause(ctx)
	}
	s.settle(ctx, settleWait)
	return turn.outcome()
}

// startThread starts the turn's thread in its folder, sandbox and model,
// with the system prompt as developer instructions, and returns its id.
func (s *codexSession) startThread(ctx context.Context, r *rpcRun) (string, error) {
	params := map[string]any{
		"approvalPolicy": "untrusted",
		"sandbox":        s.sandbox,
		"ephemeral":      true,
	}
	if s.req.Cwd != "" {
		params["cwd"] = s.req.Cwd
	}
	if s.model != "" {
		params["model"] = s.model
	}
	if sys := strings.TrimSpace(s.req.System); sys != "" {
		params["developerInstructions"] = sys
	}
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := r.call(ctx, "thread/start", params, &started); err != nil {
		return "", codexCallError(err)
	}
	return started.Thread.ID, nil
}

// outcome is how the finished turn ended: its stop reason, or the error
// callers test for.
func (t codexTurn) outcome() (string, error) {
	switch t.Status {
	case "completed":
		return "end_turn", nil
	case "interrupted":
		return "", errors.New("codex: the turn was interrupted")
	}
	if t.Error == nil {
		return "", fmt.Errorf("codex: the turn ended %s", orDefault(t.Status, "without a status"))
	}
	return "", codexError(t.Error.Message, t.Error.CodexErrorInfo)
}

// settleWait is how long a turn's end waits for the items it left open.
const settleWait = 2 * time.Second

// settle waits, up to wait, for the items the gate allowed to complete,
// then shows those still open as done. Codex 0.142 now and then says a
// turn completed before it says a command it ran did (seen under load),
// and a turn's end used to stop listening there: the person saw no trace
// of a command it was allowed to run. An item completed after settle is
// not shown twice.
func (s *codexSession) settle(ctx context.Context, wait time.Duration) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for waiting := true; waiting && len(s.openAllowed(false)) > 0; {
		select {
		case <-s.completedOne:
		case <-timer.C:
			waiting = false
		case <-ctx.Done():
			waiting = false
		}
	}
	for _, it := range s.openAllowed(true) {
		s.e.step(s.completed(it))
	}
}

// openAllowed are the commands and edits the gate allowed that have not
// completed, in the order they started; take also closes them.
func (s *codexSession) openAllowed(take bool) []codexItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	var open []codexItem
	for _, id := range s.order {
		if it, ok := s.items[id]; ok && s.allowed[id] && (it.Type == "commandExecution" || it.Type == "fileChange") {
			open = append(open, it)
			if take {
				delete(s.items, id)
				s.settled[id] = true
			}
		}
	}
	return open
}

func (s *codexSession) failure(exit exitStatus) error { return exit.failure("codex") }
