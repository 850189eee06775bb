package hostlink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"conch/backend/client"
	"conch/backend/conversation"
	"conch/backend/errcode"
	"conch/backend/remote"
)

// The person's chats on a host (SPEC §6) have a twin there, the runner's
// chat of the same id, which runs every turn. Sending here makes the twin
// when it is not there yet, posts the message to it and follows it until
// its turn has ended, bringing home what it says, asks and spends
// (chat.Manager.Mirror). Links implements chat.HostChats.

// chatWait bounds a call to a twin (the follow of its turn has no bound).
const chatWait = 30 * time.Second

// chatPoll is how often a replying twin is read.
const chatPoll = 200 * time.Millisecond

// Send gives c's twin the person's text and follows the turn it starts.
func (l *Links) Send(c conversation.Conversation, text string) (conversation.Message, error) {
	ctx, cancel := context.WithTimeout(l.life.Context(), chatWait)
	defer cancel()
	r, err := l.chatClient(ctx, c)
	if err != nil {
		return conversation.Message{}, err
	}
	if err := l.ensureTwin(ctx, r, c); err != nil {
		return conversation.Message{}, err
	}
	var msg conversation.Message
	if err := r.Do(ctx, http.MethodPost, chatPath(c.ID)+"/messages", map[string]string{"text": text}, &msg); err != nil {
		return conversation.Message{}, twinRefused(c, err)
	}
	l.Follow(c)
	return msg, nil
}

// StopTurn stops the twin's turn.
func (l *Links) StopTurn(c conversation.Conversation) error {
	return l.chatCall(c, http.MethodPost, chatPath(c.ID)+"/stop", nil)
}

// Answer answers the twin's question askID.
func (l *Links) Answer(c conversation.Conversation, askID string, allow bool) error {
	return l.chatCall(c, http.MethodPost, chatPath(c.ID)+"/asks/"+url.PathEscape(askID), map[string]bool{"allow": allow})
}

// Patch gives the twin c's mode and limit, and clears its taint when c's
// is clear; a twin not made yet takes them when it is.
func (l *Links) Patch(c conversation.Conversation) error {
	ctx, cancel := context.WithTimeout(l.life.Context(), chatWait)
	defer cancel()
	r, err := l.chatClient(ctx, c)
	if err != nil {
		return err
	}
	body := map[string]any{"mode": c.Mode, "limit": c.Limit}
	if !c.Tainted {
		body["tainted"] = false // cleared here: cleared there (a no-op when it was not)
	}
	err = r.Do(ctx, http.MethodPatch, chatPath(c.ID), body, nil)
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return twinRefused(c, err)
	}
	l.Follow(c) // its notice comes home
	return nil
}

// chatCall makes one call to c's twin and follows what it changed.
func (l *Links) chatCall(c conversation.Conversation, method, path string, body any) error {
	ctx, cancel := context.WithTimeout(l.life.Context(), chatWait)
	defer cancel()
	r, err := l.chatClient(ctx, c)
	if err != nil {
		return err
	}
	if err := r.Do(ctx, method, path, body, nil); err != nil {
		return twinRefused(c, err)
	}
	l.Follow(c)
	return nil
}

// chatClient reaches c's host's runner, saying why it could not.
func (l *Links) chatClient(ctx context.Context, c conversation.Conversation) (*runner, error) {
	r, err := l.client(ctx, c.Host)
	if err != nil {
		return nil, fmt.Errorf("this chat works on %s, which could not be reached: %s", c.Host, strings.TrimSuffix(errcode.Sentence(err), "."))
	}
	return r, nil
}

// ensureTwin makes c's twin on the runner unless it is there: the same
// id, provider, model, mode, folder and limit.
func (l *Links) ensureTwin(ctx context.Context, r *runner, c conversation.Conversation) error {
	err := r.Do(ctx, http.MethodGet, chatPath(c.ID)+"?limit=1", nil, nil)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		return err
	}
	if c.LastSeq > 0 {
		// Said things there before: a new twin would start over, its
		// messages no longer those here, seq for seq.
		return fmt.Errorf("this chat's other half on %s is gone (its Conch there lost it); start a new chat there: %w", c.Host, errcode.ErrConflict)
	}
	req := map[string]any{"id": c.ID, "title": c.Title, "provider": c.Provider, "model": c.Model, "mode": c.Mode, "cwd": remote.AtHome(c.Cwd, r.home), "limit": c.Limit}
	err = r.Do(ctx, http.MethodPost, "/api/conversations", req, nil)
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		return nil // made by a call whose answer was lost
	}
	if err != nil {
		return twinRefused(c, err)
	}
	return nil
}

func chatPath(id string) string { return "/api/conversations/" + url.PathEscape(id) }

// twinRefused is the host's refusal in its own words, with its kind (a
// conflict stays one).
func twinRefused(c conversation.Conversation, err error) error {
	var apiErr *client.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("this chat works on %s, which could not be reached: %w", c.Host, err)
	}
	code := errcode.ErrInvalid
	if apiErr.Status == http.StatusConflict {
		code = errcode.ErrConflict
	}
	return fmt.Errorf("%s (on %s): %w", strings.TrimSuffix(apiErr.Message, "."), c.Host, code)
}

// Follow follows c's twin until its turn has ended and its question is
// answered, bringing each change home; a follow of c already under way
// is woken instead. A lost host is reached again until Conch stops.
func (l *Links) Follow(c conversation.Conversation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.life.Open() {
		return
	}
	if wake, ok := l.chats[c.ID]; ok {
		select {
		case wake <- struct{}{}:
		default:
		}
		return
	}
	wake := make(chan struct{}, 1)
	l.chats[c.ID] = wake
	l.life.WG.Go(func() { l.followChat(c, wake) })
}

// followChat is Follow's loop.
func (l *Links) followChat(c conversation.Conversation, wake chan struct{}) {
	ctx := l.life.Context()
	var seq uint64
	for tries := 0; ctx.Err() == nil; {
		wait := chatPoll
		settled, gone, err := l.followOnce(ctx, c, &seq)
		switch {
		case gone != "":
			l.settleChat(c, gone)
			l.forget(c.ID, wake)
			return
		case err != nil:
			wait = l.backoff(tries)
			tries++
		case settled && l.doneFollowing(c.ID, wake):
			return
		default:
			tries = 0
		}
		select {
		case <-time.After(wait):
		case <-wake:
		case <-ctx.Done():
		}
	}
	l.forget(c.ID, wake)
}

// followOnce reads c's twin once and brings it home. settled says its
// turn has ended and it asks nothing; gone, why the twin will never
// answer (its host removed, the runner there without it); err, that the
// host could not be reached.
func (l *Links) followOnce(ctx context.Context, c conversation.Conversation, seq *uint64) (settled bool, gone string, err error) {
	if _, err := l.cfg.Hosts.Get(c.Host); err != nil {
		return false, "its host was removed", nil
	}
	r, err := l.client(ctx, c.Host)
	if err != nil {
		return false, "", err
	}
	tw, err := l.bringHome(ctx, r, c.ID, c.ID, seq)
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr):
		return false, apiErr.Message, nil
	case err != nil:
		if ctx.Err() == nil {
			l.lost(c.Host, r, err)
		}
		return false, "", err
	}
	return !tw.Running && tw.Ask == nil, "", nil
}

// forget ends the follow of chat id that wake belongs to (a newer follow
// keeps its own).
func (l *Links) forget(id string, wake chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.chats[id] == wake {
		delete(l.chats, id)
	}
}

// settleChat ends the wait of a chat whose twin is gone: it no longer
// replies or asks here, and the log says why.
func (l *Links) settleChat(c conversation.Conversation, why string) {
	l.cfg.Log.Warn("a chat's twin on its host is gone", "chat", c.ID, "host", c.Host, "why", why)
	if cur, err := l.cfg.Chats.Snapshot(c.ID); err == nil {
		_, _ = l.cfg.Chats.Mirror(c.ID, conversation.Twin{Spent: cur.Spent, Tainted: cur.Tainted})
	}
}

// doneFollowing ends a follow whose twin has settled, unless it was woken
// meanwhile (a message sent as it ended).
func (l *Links) doneFollowing(id string, wake chan struct{}) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-wake:
		return false
	default:
	}
	delete(l.chats, id)
	return true
}
