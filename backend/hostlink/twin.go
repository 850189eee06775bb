package hostlink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"conch/backend/budget"
	"conch/backend/conversation"
	"conch/backend/host"
	"conch/backend/taskrun"
)

// A chat task on a host has a chat here and its twin there, the runner's
// chat of the same task, which runs its turns. The task carries the chat's
// powers there (its mode, its taint, what it may still spend); what the
// twin says and spends comes home into the chat here, seq for seq, as it
// happens, and its taint with it.

// twinPage is the part of a chat's page (GET /api/conversations/:id) read here.
type twinPage struct {
	Conversation conversation.Conversation `json:"conversation"`
	Messages     []conversation.Message    `json:"messages"`
}

// twinChunk is the most messages brought home in one read.
const twinChunk = 200

// chatPowers fills in what a chat task takes to its host beside its
// command's options: its kind, whether it wants a worktree there, its
// chat's taint and what it may still spend, the
// least its chat and the chat it came from have left (0: no limit). A
// chat that has spent its limit sends nothing.
func (x *execution) chatPowers(o *taskrun.Options) error {
	t := x.run.Task
	if t.ConversationID == "" {
		return nil
	}
	if x.l.cfg.Chats == nil {
		return errors.New("this Conch does not send a chat's task to another computer")
	}
	c, err := x.l.cfg.Chats.Snapshot(t.ConversationID)
	if err != nil {
		return err
	}
	o.Tainted, o.Kind, o.Worktree = c.Tainted, t.Kind, t.WantsWorktree
	if err := x.lendOf(o); err != nil {
		return err
	}
	left, limited := leftOf(c)
	if c.Origin.ParentID != "" {
		if p, err := x.l.cfg.Chats.Snapshot(c.Origin.ParentID); err == nil {
			o.Tainted = o.Tainted || p.Tainted
			if l, ok := leftOf(p); ok && (!limited || l < left) {
				left, limited = l, true
			}
		}
	}
	if limited && left <= 0 {
		return fmt.Errorf("Stopped before it was sent: its chat has spent its %s limit. Raise the limit to carry on.", budget.USD(c.Limit))
	}
	if limited {
		o.Limit = left
	}
	return nil
}

// leftOf is what c may still spend, and whether it has a limit at all.
func leftOf(c conversation.Conversation) (float64, bool) {
	if c.Limit <= 0 {
		return 0, false
	}
	return c.Limit - c.Spent, true
}

// twin brings home what the task's twin chat there has that the chat here
// has not: its messages, its spend and its taint. A read that fails is
// left for the next change.
func (x *execution) twin(ctx context.Context, c *runner, twinID string) {
	here := x.run.Task.ConversationID
	if here == "" || twinID == "" || x.l.cfg.Chats == nil {
		return
	}
	x.twinMu.Lock()
	defer x.twinMu.Unlock()
	if _, err := x.l.bringHome(ctx, c, here, twinID, &x.twinSeq); err != nil {
		x.l.cfg.Log.Warn("bring a host's chat home", "task", x.id, "host", x.host, "err", err)
	}
}

// bringHome mirrors the chat twinID there into the chat here: its
// messages after *seq (0: the newest the chat here has), its question,
// whether it replies, its spend and taint. It returns the twin as it
// stood, and leaves *seq at the newest message brought.
func (l *Links) bringHome(ctx context.Context, c *runner, here, twinID string, seq *uint64) (conversation.Conversation, error) {
	if *seq == 0 {
		if cur, err := l.cfg.Chats.Snapshot(here); err == nil {
			*seq = cur.LastSeq
		}
	}
	path := "/api/conversations/" + url.PathEscape(twinID)
	for {
		var top twinPage
		if err := c.Do(ctx, http.MethodGet, path+"?limit=1", nil, &top); err != nil {
			return conversation.Conversation{}, err
		}
		tw := conversation.Twin{Spent: top.Conversation.Spent, Tainted: top.Conversation.Tainted, Ask: top.Conversation.Ask, Running: top.Conversation.Running}
		if last := top.Conversation.LastSeq; last > *seq {
			upto := min(last, *seq+twinChunk)
			var page twinPage
			q := "?before=" + strconv.FormatUint(upto+1, 10) + "&limit=" + strconv.FormatUint(upto-*seq, 10)
			if err := c.Do(ctx, http.MethodGet, path+q, nil, &page); err != nil {
				return top.Conversation, err
			}
			tw.Messages = page.Messages
			if upto < last {
				tw.Running = true // more to come: not settled yet here
			}
		}
		got, err := l.cfg.Chats.Mirror(here, tw)
		if err != nil {
			return top.Conversation, err
		}
		moved := got > *seq
		*seq = got
		if !moved || got >= top.Conversation.LastSeq {
			return top.Conversation, nil
		}
	}
}

// lendOf lends the task's provider with it when that is not a CLI of the
// host's own: an API model the person allowed there, whose record and key
// go to the runner (in memory there, for this task's run). One no longer
// allowed there sends nothing.
func (x *execution) lendOf(o *taskrun.Options) error {
	t := x.run.Task
	h, err := x.l.cfg.Hosts.Get(t.Host)
	if err != nil {
		return err
	}
	for _, p := range h.Providers {
		if kind, _ := host.Agent(p.ID); kind == t.Provider {
			return nil
		}
	}
	if !slices.Contains(h.Models, t.Provider) || x.l.cfg.Providers == nil {
		return fmt.Errorf("%s is not a coding-agent CLI on %s, and is not allowed to work there (Settings → Hosts → %s → Change)", t.Provider, h.Name, h.Name)
	}
	rec, key, err := x.l.cfg.Providers.Lendable(t.Provider)
	if err != nil {
		return err
	}
	o.Lend = &taskrun.Lent{Provider: rec, Key: key}
	return nil
}
