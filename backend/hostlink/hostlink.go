// Package hostlink carries tasks to other computers (SPEC §6): it puts
// Conch's runner on a host and starts it there (deploy.go), reaches it
// through a Unix socket forwarded over the host's one SSH connection, and
// runs each task of the host's on that runner, following it by rev and
// output offset across lost connections, a sleeping laptop and a Conch
// that was killed (execute.go). The runner does the work; this computer
// keeps the record, the one inbox of questions and the output.
package hostlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"conch/backend/client"
	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/errcode"
	"conch/backend/host"
	"conch/backend/pref"
	"conch/backend/provider"
	"conch/backend/remote/ssh"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/task"
)

// Hosts is what the links need of the hosts' keeper (*host.Service).
type Hosts interface {
	Get(id string) (store.Host, error)
	List() (host.List, error)
	// Run runs a script there, waiting for the person to accept an
	// unknown key first.
	Run(ctx context.Context, id, script string) (ssh.Result, error)
	RunInput(ctx context.Context, id, script string, input io.Reader) (ssh.Result, error)
	// Forward forwards a local Unix socket to one there.
	Forward(ctx context.Context, id, local, remote string) error
	// Reached records how reaching the host went (nil: it answered).
	Reached(id string, err error)
}

// Chats are this computer's chats (*chat.Manager): a chat task on a host
// has one here, whose twin there runs its turns.
type Chats interface {
	Snapshot(id string) (conversation.Conversation, error)
	// Mirror brings home what the twin did (see chat.Manager.Mirror),
	// returning the newest seq the chat here has.
	Mirror(id string, tw conversation.Twin) (uint64, error)
}

// Lendable gives an API-model provider's record and key, to lend a host's
// runner for a task the person allowed there (*registry.Registry).
type Lendable interface {
	Lendable(id string) (store.ProviderConfig, string, error)
}

// Config wires Links.
type Config struct {
	Hosts Hosts
	// Chats keep the chats of the chat tasks sent to hosts (nil: only
	// commands are sent).
	Chats Chats
	// Providers lend API-model providers to hosts (nil: none are).
	Providers Lendable
	// Builds finds the runner's static build for a host's arch ("amd64",
	// "arm64"): its path, and its SHA-256 in hex.
	Builds func(arch string) (path, sum string, err error)
	// Version is the runner's version this Conch starts: the versioned
	// folder on the host it is copied to.
	Version string
	// SocketDir holds the forwarded sockets, one per host (mode 0700; keep
	// it short, a socket's path is limited to about 100 bytes).
	SocketDir string
	// Retry is how long a run waits before reaching a lost host again
	// (0: 1 s, doubling to 15 s).
	Retry time.Duration
	Log   *slog.Logger
}

// Links keeps one link per host: the runner there and the client that
// reaches it. Start it before the task runner, which calls it; Stop it
// after (Stop is safe twice and before Start).
type Links struct {
	cfg Config

	mu    sync.Mutex
	life  startstop.State
	links map[string]*link
	// chats are the person's chats on hosts being followed, each with
	// the channel that wakes its follow.
	chats map[string]chan struct{}
}

// link is one host's: its runner while it is reached, and the connection
// being made (one at a time, every run waits on it).
type link struct {
	c          *runner
	connecting chan struct{}
	err        error
}

// runner is a client of a host's runner, and the home of the user it
// runs as there.
type runner struct {
	*client.Client
	home string
}

// New returns Links.
func New(cfg Config) *Links {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Retry == 0 {
		cfg.Retry = time.Second
	}
	return &Links{cfg: cfg, links: map[string]*link{}, chats: map[string]chan struct{}{}}
}

// Start lets runs reach hosts.
func (l *Links) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.life.Start(ctx); err != nil {
		return fmt.Errorf("start host links: %w", err)
	}
	return nil
}

// Stop ends every connection being made and waits for them; the hosts'
// tasks go on there.
func (l *Links) Stop() { l.life.Stop(&l.mu, nil) }

// Ready says the links can take work; each host says for itself (Check).
func (l *Links) Ready() (bool, string) { return true, "" }

// Check says why tasks cannot be sent to id, naming the hosts that can
// take work.
func (l *Links) Check(id string) error {
	if _, err := l.cfg.Hosts.Get(id); err == nil {
		return nil
	}
	list, err := l.cfg.Hosts.List()
	if err != nil {
		return err
	}
	names := hostNames(list)
	if len(names) == 0 {
		return fmt.Errorf("%w: there is no host %q: no other computer is set up (Settings → Hosts, or conch hosts add)", errcode.ErrInvalid, id)
	}
	return fmt.Errorf("%w: there is no host %q; the hosts that can take work are %s", errcode.ErrInvalid, id, strings.Join(names, ", "))
}

// hostNames are the ids of the hosts in list, sorted.
func hostNames(list host.List) []string {
	var names []string
	for _, h := range list.Hosts {
		names = append(names, h.ID)
	}
	sort.Strings(names)
	return names
}

// Limits are the host's own limits (a removed host's: the defaults, for
// the tasks it left).
func (l *Links) Limits(id string) pref.Limits {
	if h, err := l.cfg.Hosts.Get(id); err == nil && h.Limits.Background > 0 {
		return h.Limits
	}
	return host.DefaultLimits
}

// forgetWait bounds how long deleting a task there may take.
const forgetWait = 30 * time.Second

// Forget deletes there a task deleted here, in the background (a host out
// of reach, or one the runner finds working, keeps it; the log says so).
func (l *Links) Forget(id, taskID string) {
	l.mu.Lock()
	if !l.life.Open() {
		l.mu.Unlock()
		return
	}
	ctx := l.life.Context()
	l.life.WG.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.life.WG.Done()
		ctx, cancel := context.WithTimeout(ctx, forgetWait)
		defer cancel()
		c, err := l.client(ctx, id)
		if err == nil {
			err = c.Do(ctx, http.MethodDelete, "/api/tasks/"+url.PathEscape(taskID), nil, nil)
		}
		var apiErr *client.Error
		if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound) {
			l.cfg.Log.Warn("a task deleted here is still on its host", "host", id, "task", taskID, "err", err)
		}
	}()
}

// errClosed is a connection asked for while Conch stops.
var errClosed = errors.New("Conch is stopping")

// client is a client of the runner on id: the one the link holds, else
// one made now (putting the runner there and starting it if it must).
// Runs asking at once share one connection's making.
func (l *Links) client(ctx context.Context, id string) (*runner, error) {
	for {
		l.mu.Lock()
		if !l.life.Open() {
			l.mu.Unlock()
			return nil, errClosed
		}
		lk := l.links[id]
		if lk == nil {
			lk = &link{}
			l.links[id] = lk
		}
		if lk.c != nil {
			c := lk.c
			l.mu.Unlock()
			return c, nil
		}
		if ch := lk.connecting; ch != nil {
			l.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			l.mu.Lock()
			err := lk.err
			l.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		ch := make(chan struct{})
		lk.connecting = ch
		lctx := l.life.Context()
		l.life.WG.Add(1)
		l.mu.Unlock()
		c, err := l.connect(lctx, id)
		l.cfg.Hosts.Reached(id, err)
		l.mu.Lock()
		lk.c, lk.err, lk.connecting = c, err, nil
		close(ch)
		l.mu.Unlock()
		l.life.WG.Done()
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// lost forgets c, a client of id's runner that stopped answering: the
// next run to ask makes a new connection. A newer client is kept.
func (l *Links) lost(id string, c *runner, err error) {
	l.mu.Lock()
	lk := l.links[id]
	mine := lk != nil && lk.c == c
	if mine {
		lk.c = nil
	}
	l.mu.Unlock()
	if mine {
		l.cfg.Log.Info("lost the runner on a host", "host", id, "err", err)
		l.cfg.Hosts.Reached(id, err)
	}
}

// socketOf is where id's runner is reached on this computer.
func (l *Links) socketOf(id string) string {
	return filepath.Join(l.cfg.SocketDir, id+".sock")
}

// backoff is how long to wait before the n-th try to reach a lost host.
func (l *Links) backoff(n int) time.Duration {
	d := l.cfg.Retry << min(n, 4)
	return min(d, 15*time.Second)
}

// Agents are the coding-agent CLIs found on host when it was last tested,
// as engines whose ids are their providers' kinds.
func (l *Links) Agents(id string) ([]engine.Engine, error) {
	h, err := l.cfg.Hosts.Get(id)
	if err != nil {
		return nil, err
	}
	var out []engine.Engine
	for _, p := range h.Providers {
		kind, name := host.Agent(p.ID)
		if kind == "" {
			continue
		}
		out = append(out, engine.Engine{ID: kind, Info: provider.Info{ID: kind, Name: name, Kind: kind,
			Category: provider.CodingAgent, Ready: true, CanAsk: true, Version: p.Version}})
	}
	return out, nil
}

// Reach connects to host's runner (putting it there first if need be),
// saying why it could not in the person's words.
func (l *Links) Reach(ctx context.Context, id string) error {
	if _, err := l.client(ctx, id); err != nil {
		name := id
		if h, gerr := l.cfg.Hosts.Get(id); gerr == nil && h.Name != "" {
			name = h.Name
		}
		why := ": " + strings.TrimSuffix(errcode.Sentence(err), ".")
		var e *ssh.Error
		if errors.As(err, &e) && e.Kind == ssh.Unreachable {
			why = fmt.Sprintf(" (%s): %s", e.Target, strings.TrimSuffix(e.Detail, "."))
		}
		list, _ := l.cfg.Hosts.List()
		return fmt.Errorf("%s could not be reached%s; nothing was started (the hosts set up are %s)", name, why, strings.Join(hostNames(list), ", "))
	}
	return nil
}

// RemoveWorktree removes on its host the kept worktree (and branch) of
// task id, one that holds work only with confirm, and returns the task as
// it stands there. The host's refusal is its own words (a conflict says
// what the worktree holds).
func (l *Links) RemoveWorktree(ctx context.Context, hostID, id string, confirm bool) (task.Task, error) {
	c, err := l.client(ctx, hostID)
	if err != nil {
		return task.Task{}, err
	}
	var there task.Task
	err = c.Do(ctx, http.MethodPost, "/api/tasks/"+url.PathEscape(id)+"/remove-worktree", map[string]bool{"confirm": confirm}, &there)
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict:
		return task.Task{}, fmt.Errorf("%s: %w", apiErr.Message, errcode.ErrConflict)
	case errors.As(err, &apiErr):
		return task.Task{}, fmt.Errorf("%s answered: %s", hostID, apiErr.Message)
	}
	return there, err
}

// Allowed are the API-model providers the person allowed to carry tasks
// to host.
func (l *Links) Allowed(id string) ([]string, error) {
	h, err := l.cfg.Hosts.Get(id)
	if err != nil {
		return nil, err
	}
	return h.Models, nil
}
