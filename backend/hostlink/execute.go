package hostlink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"conch/backend/client"
	"conch/backend/errcode"
	"conch/backend/remote"
	"conch/backend/remote/ssh"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// stopWait bounds how long a Stop waits for the host to end the task's
// work (the runner's own stop waits up to 10 s for a tree that will not
// go).
const stopWait = 12 * time.Second

// Execute runs run's task on its host's runner, under the same id, and
// follows it there until it ends: its output into the log here, byte for
// byte; its current step and steps onto the record here; its questions
// into this computer's one inbox, and the answers back. A lost connection
// is reached again, caught up by rev and output offset; Stop stops it
// there. A host that cannot be reached when the task is sent fails it at
// once, saying why.
func (l *Links) Execute(ctx context.Context, run *taskrun.Run) (taskrun.Outcome, error) {
	x := &execution{l: l, run: run, id: run.Task.ID, host: run.Task.Host, answers: map[string]bool{}}
	defer x.settle()
	return x.execute(ctx)
}

// execution is one run of a task on a host.
type execution struct {
	l         *Links
	run       *taskrun.Run
	id, host  string
	placed    bool // the task was sent there (or found there)
	unreached bool // the record says the host is unreachable

	// out orders the writes to the log here: the stream's and a drain's.
	out sync.Mutex

	mu sync.Mutex
	// asking is the question of the host's asked here, and how to take
	// it back when the host moves on.
	askID  string
	cancel context.CancelFunc
	asks   sync.WaitGroup
	// answers are the answers given here that the host has not taken.
	answers map[string]bool

	// sent are the chat's powers a chat task takes there (chatPowers).
	sent taskrun.Options
	// twinMu orders bringing the twin chat home; twinSeq is the newest
	// seq the chat here has of it.
	twinMu  sync.Mutex
	twinSeq uint64
}

func (x *execution) execute(ctx context.Context) (taskrun.Outcome, error) {
	if err := x.chatPowers(&x.sent); err != nil {
		return taskrun.Outcome{}, err
	}
	// tries counts the tries in a row that did not reach the host.
	for tries := 0; ; tries++ {
		c, err := x.reach(ctx)
		if err == nil {
			tries = 0
			out, done, ferr := x.follow(ctx, c)
			if done {
				return out, ferr
			}
			err = ferr
			if ctx.Err() == nil {
				x.l.lost(x.host, c, err)
			}
		}
		if ctx.Err() != nil {
			return x.ended(ctx)
		}
		if !x.placed && !x.run.Reattach {
			return taskrun.Outcome{}, x.unreachable(err)
		}
		x.away()
		select {
		case <-time.After(x.l.backoff(tries)):
		case <-ctx.Done():
			return x.ended(ctx)
		}
	}
}

// reach is a client of the host's runner. While it waits for the person
// to accept the host's key, the task says so.
func (x *execution) reach(ctx context.Context) (*runner, error) {
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		said := false
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if h, err := x.l.cfg.Hosts.Get(x.host); err == nil && h.Fingerprint != "" && !said {
				said = true
				x.run.Amend(func(t *task.Task) {
					t.Current = "Waiting for you to accept the key of " + h.Name + " (Settings → Hosts)"
				})
			}
		}
	})
	c, err := x.l.client(ctx, x.host)
	close(done)
	watch.Wait()
	return c, err
}

// name is what the person calls the host.
func (x *execution) name() string {
	if h, err := x.l.cfg.Hosts.Get(x.host); err == nil && h.Name != "" {
		return h.Name
	}
	return x.host
}

// unreachable is why a task never sent to its host failed.
func (x *execution) unreachable(err error) error {
	var e *ssh.Error
	if errors.As(err, &e) && e.Kind == ssh.Unreachable {
		return fmt.Errorf("%s (%s) could not be reached, so nothing ran there: %s", x.name(), e.Target, e.Detail)
	}
	return fmt.Errorf("%s could not be reached, so nothing ran there: %s", x.name(), err)
}

// away says on the record that the host is out of reach, once.
func (x *execution) away() {
	if x.unreached {
		return
	}
	x.unreached = true
	name := x.name()
	x.run.Amend(func(t *task.Task) {
		t.Current = name + " is unreachable; it carries on there"
	})
}

// follow places the task on the runner (done says it ended, with its
// outcome) and follows it until it ends or the connection is lost (the
// error says how).
func (x *execution) follow(ctx context.Context, c *runner) (taskrun.Outcome, bool, error) {
	if err := x.place(ctx, c); err != nil {
		var apiErr *client.Error
		if errors.As(err, &apiErr) {
			return taskrun.Outcome{}, true, fmt.Errorf("%s refused the task: %s", x.host, apiErr.Message)
		}
		return taskrun.Outcome{}, false, err
	}
	if x.unreached {
		x.unreached = false
		x.run.Amend(func(t *task.Task) { t.Current = "" })
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The output streams as it is written there; the states follow apart.
	var streaming sync.WaitGroup
	defer streaming.Wait()
	streaming.Go(func() { x.stream(fctx, c) })
	var out taskrun.Outcome
	var end error
	finished := false
	f := client.NewFollower(c.Client, map[string]client.Mark{x.id: {}}).Only().States()
	err := f.Follow(fctx, func(ch client.Change) {
		switch {
		case finished:
		case ch.Deleted != "":
			finished, end = true, fmt.Errorf("the task was removed on %s", x.host)
			cancel()
		case ch.Task != nil && ch.Task.Status.Finished():
			finished = true
			out, end = x.finish(fctx, c, *ch.Task)
			cancel()
		case ch.Task != nil:
			x.mirror(ctx, c, *ch.Task)
		}
	})
	if finished {
		return out, true, end
	}
	return taskrun.Outcome{}, false, err
}

// place makes sure the runner has the task: it is asked for by id; one it
// does not have is made there with the same id; one that ended before this
// run began (a retry, a resume) is sent back to its queue.
func (x *execution) place(ctx context.Context, c *runner) error {
	path := "/api/tasks/" + url.PathEscape(x.id)
	var there task.Task
	err := c.Do(ctx, http.MethodGet, path, nil, &there)
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
		x.placed = true // from here it may be there, whatever the answer
		err = c.Do(ctx, http.MethodPost, "/api/tasks", x.request(c), nil)
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
			return nil // made by an answer this run never read
		}
		return err
	case err != nil:
		return err
	}
	if x.placed || x.run.Reattach || !there.Status.Finished() {
		x.placed = true
		return nil
	}
	x.placed = true
	if x.sent.Lend != nil {
		// Its provider was let go of when it ended there: the request that
		// made it lends it again (and is refused, the task being there).
		err = c.Do(ctx, http.MethodPost, "/api/tasks", x.request(c), nil)
		if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict) {
			return err
		}
	}
	again := "retry"
	if x.run.Task.Resume != nil && there.Resumable() == "" {
		again = "resume"
	}
	err = c.Do(ctx, http.MethodPost, path+"/"+again, nil, nil)
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		return nil // queued again by an answer this run never read
	}
	return err
}

// request is what makes the task on the runner: its id, its work and its
// powers, a folder under ~ written as the home there.
func (x *execution) request(c *runner) taskrun.CreateRequest {
	t := x.run.Task
	cwd := remote.AtHome(t.Cwd, c.home)
	req := taskrun.CreateRequest{Text: t.Text, Title: t.Title, Options: taskrun.Options{
		ID: t.ID, Provider: t.Provider, Model: t.Model, Mode: string(t.Mode), Cwd: cwd,
		Check: t.Check, CheckRetries: &t.CheckRetries, Tainted: x.sent.Tainted, Limit: x.sent.Limit,
		Kind: x.sent.Kind, Worktree: x.sent.Worktree, Lend: x.sent.Lend,
	}}
	if t.Check == "" {
		req.Options.CheckRetries = nil
	}
	return req
}

// stream carries the host's output into the log here as it is written
// there, from the log's end, until the task has ended (the follow ends it
// then) or the connection breaks: a break starts it again once the
// follow has reached the runner once more.
func (x *execution) stream(ctx context.Context, c *runner) {
	for ctx.Err() == nil {
		err := c.StreamOutput(ctx, x.id, x.run.Written(), x.write)
		if err != nil {
			return // the follow sees the same break, and reaches the host again
		}
		// Ended with the task there; the follow finishes it.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// write appends the host's output from byte from to the log here, leaving
// out what the log holds already.
func (x *execution) write(from int64, b []byte) {
	x.out.Lock()
	defer x.out.Unlock()
	have := x.run.Written()
	if from+int64(len(b)) <= have {
		return
	}
	if from < have {
		b = b[have-from:]
	} else if from > have {
		// Never handed on (the follower reads from the log's end); if it
		// were, the log here would have a hole: leave it to the catch-up.
		return
	}
	_, _ = x.run.Output.Write(b)
}

// mirror carries the host's record of a working task onto the one here:
// what it does now and its steps, and its question into the inbox here.
func (x *execution) mirror(ctx context.Context, c *runner, there task.Task) {
	asking := there.Status == task.NeedsYou && there.Ask != nil
	x.run.Amend(func(t *task.Task) {
		t.Steps = append([]string{}, there.Steps...)
		if !asking {
			t.Current = there.Current
		}
		keepThere(t, there)
	})
	x.twin(ctx, c, there.ConversationID)
	x.mu.Lock()
	defer x.mu.Unlock()
	if !asking {
		x.dropAsk()
		return
	}
	q := *there.Ask
	if allow, ok := x.answers[q.ID]; ok {
		// Answered here already; the answer never arrived there.
		x.asks.Go(func() { x.answer(ctx, c, q.ID, allow) })
		return
	}
	if x.askID == q.ID {
		return
	}
	x.dropAsk()
	actx, cancel := context.WithCancel(ctx)
	x.askID, x.cancel = q.ID, cancel
	x.asks.Go(func() {
		allow, err := x.run.Ask(actx, q)
		if actx.Err() != nil || (err != nil && !errors.Is(err, taskrun.ErrDeclined)) {
			return // the host moved on, or the question expired on both sides
		}
		x.mu.Lock()
		x.answers[q.ID] = allow
		x.mu.Unlock()
		x.answer(ctx, c, q.ID, allow)
	})
}

// dropAsk takes back the question asked here; call with x.mu held.
func (x *execution) dropAsk() {
	if x.cancel != nil {
		x.cancel()
	}
	x.askID, x.cancel = "", nil
}

// answer gives the host the answer to its question askID. One the host
// took, or no longer waits for, is forgotten; one that did not arrive is
// sent again when the host is next reached and still asks.
func (x *execution) answer(ctx context.Context, c *runner, askID string, allow bool) {
	body := struct {
		AskID string `json:"askId"`
		Allow bool   `json:"allow"`
	}{askID, allow}
	err := c.Do(ctx, http.MethodPost, "/api/tasks/"+url.PathEscape(x.id)+"/answer", body, nil)
	var apiErr *client.Error
	if err == nil || errors.As(err, &apiErr) {
		x.mu.Lock()
		delete(x.answers, askID)
		x.mu.Unlock()
	}
}

// finish is the outcome of a task that ended there, once every byte of
// its output is here.
func (x *execution) finish(ctx context.Context, c *runner, there task.Task) (taskrun.Outcome, error) {
	x.drain(ctx, c, there.OutputBytes)
	x.twin(ctx, c, there.ConversationID)
	x.run.Amend(func(t *task.Task) {
		t.Steps = append([]string{}, there.Steps...)
		keepThere(t, there)
	})
	switch there.Status {
	case task.Done:
		return taskrun.Outcome{Summary: there.Summary, Result: there.Result, ExitCode: there.ExitCode}, nil
	case task.Stopped:
		return taskrun.Outcome{}, taskrun.ErrStopped
	case task.Interrupted:
		return taskrun.Outcome{}, stoppedThere{x.host}
	default:
		return taskrun.Outcome{ExitCode: there.ExitCode}, errors.New(there.Error)
	}
}

// drain reads the output there up to size into the log here.
func (x *execution) drain(ctx context.Context, c *runner, size int64) {
	for have := x.run.Written(); have < size; have = x.run.Written() {
		b, _, err := c.Output(ctx, x.id, have)
		if err != nil || len(b) == 0 {
			return
		}
		x.write(have, b)
	}
}

// ended is a run that this Conch ended: a Stop is carried to the host
// (within stopWait), and the output it printed meanwhile brought here; a
// Conch that stops leaves the task working there.
func (x *execution) ended(ctx context.Context) (taskrun.Outcome, error) {
	if !errors.Is(context.Cause(ctx), taskrun.ErrStopped) {
		return taskrun.Outcome{}, ctx.Err()
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	c, err := x.l.client(sctx, x.host)
	if err == nil {
		var there task.Task
		err = c.Do(sctx, http.MethodPost, "/api/tasks/"+url.PathEscape(x.id)+"/stop", nil, &there)
		var apiErr *client.Error
		switch {
		case err == nil:
			x.drain(sctx, c, there.OutputBytes)
		case errors.As(err, &apiErr):
			err = nil // it had ended there, or was never sent
		}
	}
	if err != nil && x.placed {
		x.run.Progress("", "Could not reach "+x.host+" to stop it there: "+errcode.Sentence(err))
	}
	return taskrun.Outcome{}, ctx.Err()
}

// settle takes back a question still asked here and waits for every
// answer being sent.
func (x *execution) settle() {
	x.mu.Lock()
	x.dropAsk()
	x.mu.Unlock()
	x.asks.Wait()
}

// stoppedThere ends a task interrupted: the runner on its host stopped
// while it worked (a host that rebooted), and healed it so.
type stoppedThere struct{ host string }

func (e stoppedThere) Error() string {
	return "Conch's runner on " + e.host + " stopped while this was running."
}

func (e stoppedThere) Unwrap() error { return taskrun.ErrInterrupted }

// keepThere copies onto the record here what only the host knows of a
// chat task: its worktree there (made, then settled: what it holds, its
// salvage) and the note its hand-off left.
func keepThere(t *task.Task, there task.Task) {
	if there.Worktree != nil {
		w := there.Clone().Worktree
		t.Worktree = w
	}
	if there.Note != "" {
		t.Note = there.Note
	}
}
