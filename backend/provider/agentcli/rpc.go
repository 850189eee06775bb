package agentcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"conch/backend/provider"
)

// Codex (`codex app-server`) and Gemini CLI (`gemini --acp`) are driven
// over JSON-RPC on their stdio: one JSON object per line each way. Conch
// calls them (start a session, send a prompt) and they call Conch back
// (may I run this?), both at once. rpcRun is one such run: it is the
// handler of the CLI's output lines, and it runs the CLI's session in a
// goroutine of its own (drive) that ends the run when it returns.

// errExited is what a call gets when the CLI exits before it answers.
var errExited = errors.New("the CLI exited")

// rpcCallError is a JSON-RPC error the CLI answered a call with.
type rpcCallError struct {
	Method  string
	Code    int
	Message string
}

func (e *rpcCallError) Error() string { return fmt.Sprintf("%s: %s (%d)", e.Method, e.Message, e.Code) }

// rpcSession is what one CLI does with an rpcRun.
type rpcSession interface {
	// drive runs the session (handshake, prompt, waiting for the end of
	// the turn) and says how it ended: the stop reason, or an error
	// (errExited when the CLI went away). ctx ends when the run is
	// stopped or the CLI exits.
	drive(ctx context.Context, r *rpcRun) (stop string, err error)
	// notify handles a notification from the CLI, in order.
	notify(method string, params json.RawMessage) error
	// request answers a call from the CLI: a result, or an error sent
	// back as JSON-RPC error. It runs in a goroutine of its own and may
	// wait (for the person); ctx ends with the run.
	request(ctx context.Context, method string, params json.RawMessage) (any, *rpcError)
	// failure is the error of a CLI that exited during the run, with how
	// it exited.
	failure(exit exitStatus) error
}

// stderrReader is a session that reads what the CLI says on stderr, line
// by line, as it comes.
type stderrReader interface {
	stderr(line string)
}

// rpcRun is one JSON-RPC run of a CLI; it is the proc's handler.
type rpcRun struct {
	p    *proc
	e    emitter
	s    rpcSession
	name string

	ctx    context.Context // ends when stopped, or when the CLI has exited
	cancel context.CancelFunc
	wg     sync.WaitGroup // drive and the requests in flight

	mu      sync.Mutex
	next    int
	pending map[string]chan rpcMessage

	stop    string
	err     error
	settled chan struct{} // closed when drive has returned
}

// startRPC starts the run's session on p; its events go to e.
func startRPC(p *proc, e emitter, name string, s rpcSession) *rpcRun {
	ctx, cancel := context.WithCancel(e.ctx)
	r := &rpcRun{p: p, e: e, s: s, name: name, ctx: ctx, cancel: cancel,
		pending: map[string]chan rpcMessage{}, settled: make(chan struct{})}
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(r.settled)
		r.stop, r.err = s.drive(ctx, r)
		// The session is over: the CLI is told no more comes, and made to
		// go if it lingers.
		p.closeStdin()
		select {
		case <-p.exited:
		case <-time.After(p.grace):
			p.terminate()
		}
	}()
	return r
}

// call sends a request and waits for its answer, decoded into out (which
// may be nil).
func (r *rpcRun) call(ctx context.Context, method string, params, out any) error {
	r.mu.Lock()
	r.next++
	id := json.RawMessage(fmt.Sprint(r.next))
	ch := make(chan rpcMessage, 1)
	r.pending[idKey(id)] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, idKey(id))
		r.mu.Unlock()
	}()
	if err := r.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return errExited
	}
	select {
	case m := <-ch:
		if len(m.Error) > 0 {
			var e rpcError
			_ = json.Unmarshal(m.Error, &e)
			return &rpcCallError{Method: method, Code: e.Code, Message: e.Message}
		}
		if out != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, out); err != nil {
				return fmt.Errorf("%w: %s %s answered %.200s: %v", provider.ErrProtocol, r.name, method, m.Result, err)
			}
		}
		return nil
	case <-r.p.exited:
		return errExited
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// notifyCLI sends a notification.
func (r *rpcRun) notifyCLI(method string, params any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	return r.send(msg)
}

func (r *rpcRun) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return r.p.write(append(b, '\n'))
}

// line reads one message from the CLI: an answer to a call, a
// notification, or a call of its own.
func (r *rpcRun) line(raw []byte) error {
	var m rpcMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%w: %s: %v", provider.ErrProtocol, r.name, err)
	}
	switch {
	case m.Method == "" && len(m.ID) > 0:
		r.mu.Lock()
		ch := r.pending[idKey(m.ID)]
		r.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default: // a second answer to one call is dropped
			}
		}
	case m.Method != "" && len(m.ID) == 0:
		return r.s.notify(m.Method, m.Params)
	case m.Method != "":
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			result, rerr := r.s.request(r.ctx, m.Method, m.Params)
			reply := rpcReply{JSONRPC: "2.0", ID: m.ID, Result: result, Error: rerr}
			if rerr == nil && result == nil {
				reply.Result = struct{}{}
			}
			_ = r.send(reply)
		}()
	}
	return nil
}

// release ends what is still waiting once the CLI has exited.
func (r *rpcRun) release() {
	r.cancel()
	r.wg.Wait()
}

func (r *rpcRun) finish(exit exitStatus) provider.Event {
	<-r.settled
	switch {
	case r.err == nil:
		return provider.Event{Kind: provider.DoneEvent, StopReason: r.stop}
	case errors.Is(r.err, errExited):
		return provider.Event{Kind: provider.ErrorEvent, Err: r.s.failure(exit)}
	}
	return provider.Event{Kind: provider.ErrorEvent, Err: r.err}
}

// launchRPC starts a CLI driven over JSON-RPC on its stdio.
func launchRPC(ctx context.Context, cfg Config, name, bin string, args []string, dir string, req provider.Request, mk func(e emitter) rpcSession) (<-chan provider.Event, error) {
	return launchWith(ctx, cfg, name, bin, args, dir, req.Mark, nil, true, func(p *proc, e emitter) handler {
		s := mk(e)
		if l, ok := s.(stderrReader); ok {
			p.errs.lineHook(l.stderr)
		}
		return startRPC(p, e, name, s)
	})
}
