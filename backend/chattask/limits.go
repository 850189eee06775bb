package chattask

import (
	"fmt"
	"log/slog"

	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/store"
)

// LimitJob is the spend limit of a delegate's helpers together (their
// job's cap).
const LimitJob = "job"

// Limits is the spend rule of every chat (chat.Config.Limit): a task's
// chat spends as part of its job, which may spend its cap together, and
// of the chat it came from, whose limit holds; any other chat has its own
// limit. It reads what is stored: every change is stored before it is
// kept in memory.
func Limits(st store.Conversations, log *slog.Logger) func(c conversation.Conversation) *chat.SpendLimitError {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(c conversation.Conversation) *chat.SpendLimitError {
		if c.JobCap > 0 {
			if spent := jobSpent(st, log, c.JobID); spent >= c.JobCap {
				return &chat.SpendLimitError{Kind: LimitJob, Message: fmt.Sprintf("Stopped: this job's helpers have spent %s of its %s cap. Raise the cap (Carry on) to go on.", budget.USD(spent), budget.USD(c.JobCap))}
			}
		}
		if c.Origin.ParentID != "" {
			if p, err := st.Conversation(c.Origin.ParentID); err == nil {
				if p.Limit > 0 && p.Spent >= p.Limit {
					return &chat.SpendLimitError{Kind: chat.LimitChat, Message: fmt.Sprintf("Stopped: the chat this came from has spent %s of its %s limit. Raise its limit to carry on.", budget.USD(p.Spent), budget.USD(p.Limit))}
				}
				return nil
			}
		}
		return chat.OwnLimit(c)
	}
}

// jobSpent is what the chats of job id have spent together.
func jobSpent(st store.Conversations, log *slog.Logger, id string) float64 {
	if id == "" {
		return 0
	}
	cs, err := st.ChatsInJob(id)
	if err != nil {
		log.Error("read a job's chats", "job", id, "err", err)
		return 0
	}
	total := 0.0
	for _, c := range cs {
		total += c.Spent
	}
	return total
}

// overLimit says why the task's chat id may spend no more, or nil when it
// may.
func (x *Executor) overLimit(id string) (*chat.SpendLimitError, error) {
	c, err := x.cfg.Chats.Snapshot(id)
	if err != nil {
		return nil, err
	}
	if l := x.limit(c); l != nil {
		return l, nil
	}
	return x.cfg.Chats.OverMonth()
}

// raiseJobCap raises the cap of the job chat id belongs to by what it was
// (once more of the same), for the person's Carry on; it returns the new
// cap. A chat of no job gives 0 and changes nothing.
func (x *Executor) raiseJobCap(id string) (float64, error) {
	c, err := x.cfg.Chats.Snapshot(id)
	if err != nil {
		return 0, err
	}
	if c.JobID == "" || c.JobCap <= 0 {
		return 0, nil
	}
	next := c.JobCap * 2
	cs, err := x.cfg.Store.ChatsInJob(c.JobID)
	if err != nil {
		return 0, fmt.Errorf("raise the cap of job %s: %w", c.JobID, err)
	}
	for _, o := range cs {
		if err := x.cfg.Chats.SetJobCap(o.ID, next); err != nil {
			return 0, err
		}
	}
	return next, nil
}
