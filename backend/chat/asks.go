package chat

import (
	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/provider"
	"conch/backend/tool"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/google/uuid"
)

// askDetail is what the person reads when asked: the whole command for
// run_command (a title is cut short), the call's title otherwise.
func askDetail(title, name string, args json.RawMessage, cwd string) string {
	if name == "run_command" {
		var a struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(args, &a) == nil && a.Command != "" {
			return "Run `" + a.Command + "` in " + cwd
		}
	}
	return title
}

// askChange is the file write a question about call shows: the file as it
// is and as it would be (write_file), or the piece replaced (edit_file);
// nil for any other call or arguments it cannot read.
func askChange(name string, args json.RawMessage, cwd string) *ask.Change {
	switch name {
	case "write_file":
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if json.Unmarshal(args, &a) != nil || a.Path == "" {
			return nil
		}
		p, err := tool.Resolve(cwd, a.Path)
		if err != nil {
			return nil
		}
		before, isNew := readForChange(p)
		return ask.NewChange(a.Path, before, a.Content, isNew)
	case "edit_file":
		var a struct {
			Path string `json:"path"`
			Old  string `json:"old"`
			New  string `json:"new"`
		}
		if json.Unmarshal(args, &a) != nil || a.Path == "" {
			return nil
		}
		return ask.NewChange(a.Path, a.Old, a.New, false)
	}
	return nil
}

// agentChange is the change a coding agent's edit step would make, for
// its question (nil when the CLI did not say).
func agentChange(w *provider.Write, cwd string) *ask.Change {
	if w == nil || w.Path == "" {
		return nil
	}
	if !w.Whole {
		return ask.NewChange(w.Path, w.Old, w.New, false)
	}
	p, err := tool.Resolve(cwd, w.Path)
	if err != nil {
		return nil
	}
	before, isNew := readForChange(p)
	return ask.NewChange(w.Path, before, w.New, isNew)
}

// readForChange reads a regular file's start (a little over what a Change
// keeps), reporting a file that is not there as new.
func readForChange(p string) (string, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, _ := io.ReadAll(io.LimitReader(f, ask.MaxChange+1))
	return string(b), false
}

// taint marks the chat tainted (once) and says why in a notice.
func (m *Manager) taint(e *entry, why string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c.Tainted {
		return
	}
	_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Tainted = true
		return nil
	}, m.notice("This chat is now tainted: "+why+". Every side effect asks first until you clear it."))
}

// ask puts a question in the chat and waits for Answer, the timeout or ctx.
// In a task's chat the task asks instead (it becomes needs-you, and the
// approval inbox, the notification and the chat can all answer it).
func (m *Manager) ask(ctx context.Context, e *entry, callID, toolName, detail string, change *ask.Change) ask.Answer {
	now := m.cfg.Now().UTC()
	q := ask.New(uuid.NewString(), callID, toolName, detail, now, m.cfg.AskTimeout)
	q.Change = change
	answer := make(chan bool, 1)
	msg := m.message(conversation.AskKind)
	msg.Ask = &q
	e.mu.Lock()
	var forward func(ctx context.Context, q ask.Question) ask.Answer
	if e.behalf != nil && e.behalf.Ask != nil {
		forward = e.behalf.Ask
	}
	_, err := m.updateLocked(e, func(c *conversation.Conversation) error {
		qc := q
		c.Ask = &qc
		return nil
	}, msg)
	if err == nil {
		if forward != nil {
			e.fwd = q.ID
		} else {
			e.ask = &pending{id: q.ID, answer: answer}
		}
	}
	e.mu.Unlock()
	if err != nil {
		return ask.Stopped
	}
	if forward != nil {
		ans := forward(ctx, q)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.fwd = ""
		_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
			c.Ask = nil
			return nil
		}, m.answerMessage(q, ans))
		return ans
	}
	timer := time.NewTimer(m.cfg.AskTimeout)
	defer timer.Stop()
	settle := ask.Stopped
	select {
	case allow := <-answer:
		return verdict(allow)
	case <-ctx.Done():
	case <-timer.C:
		settle = ask.TimedOut
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ask == nil || e.ask.id != q.ID { // answered at the same moment: the answer wins
		return verdict(<-answer)
	}
	e.ask = nil
	_, _ = m.updateLocked(e, func(c *conversation.Conversation) error {
		c.Ask = nil
		return nil
	}, m.answerMessage(q, settle))
	return settle
}

func verdict(allow bool) ask.Answer {
	if allow {
		return ask.Allowed
	}
	return ask.Declined
}
