package chat

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"conch/backend/conversation"
	"conch/backend/remote"
	"conch/backend/store"
	"conch/backend/task"
)

// CreateRequest is what it takes to start a chat; every field is optional.
type CreateRequest struct {
	Title    string  `json:"title,omitempty"`
	Provider string  `json:"provider,omitempty"`
	Model    string  `json:"model,omitempty"`
	Mode     string  `json:"mode,omitempty"`
	Cwd      string  `json:"cwd,omitempty"`
	Limit    float64 `json:"limit,omitempty"`
	// Origin is set by the task engine for a task's own chat; the API
	// always makes a chat.
	Origin conversation.Origin `json:"-"`
	// Tainted starts a task's chat with its parent's taint.
	Tainted bool `json:"-"`
	// JobID and JobCap put a helper's chat in its delegate's job, which
	// may spend JobCap together.
	JobID  string  `json:"-"`
	JobCap float64 `json:"-"`
	// Host makes a chat whose turns run on a host (SPEC §6): its provider
	// is a coding-agent CLI there, and its folder ("~", "~/…" or
	// absolute) is there.
	Host string `json:"host,omitempty"`
	// ID, on a host's runner only, is the id the chat has on the desktop
	// that made it: the same chat on both sides (Config.ClientIDs).
	ID string `json:"id,omitempty"`
}

// Create validates req and stores a new conversation. A chat may start
// without a provider; sending to it then says to pick one.
func (m *Manager) Create(req CreateRequest) (conversation.Conversation, error) {
	if err := m.checkOpen(); err != nil {
		return conversation.Conversation{}, err
	}
	mode := task.Mode(req.Mode)
	if req.Mode == "" {
		mode = task.Ask
	}
	if !mode.Valid() {
		return conversation.Conversation{}, fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, req.Mode)
	}
	if req.Host == "" {
		if err := m.checkProvider(req.Provider); err != nil {
			return conversation.Conversation{}, err
		}
	}
	title := strings.TrimSpace(req.Title)
	if len(title) > maxTitle {
		return conversation.Conversation{}, fmt.Errorf("%w: title is longer than %d bytes", ErrInvalid, maxTitle)
	}
	if err := checkLimit(req.Limit); err != nil {
		return conversation.Conversation{}, err
	}
	cwd, err := m.folderOf(req)
	if err != nil {
		return conversation.Conversation{}, err
	}
	origin := req.Origin
	if origin.Kind == "" {
		origin.Kind = conversation.FromChat
	}
	now := m.cfg.Now().UTC()
	if req.ID != "" {
		// The id is looked for, then taken, in one step.
		m.idMu.Lock()
		defer m.idMu.Unlock()
	}
	id, err := m.idOf(req)
	if err != nil {
		return conversation.Conversation{}, err
	}
	c := conversation.Conversation{
		ID: id, Title: title, Origin: origin, Host: req.Host,
		Provider: req.Provider, Model: req.Model, Mode: mode, Cwd: cwd, Limit: req.Limit, Tainted: req.Tainted,
		JobID: req.JobID, JobCap: req.JobCap,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
	}
	if err := m.cfg.Store.PutConversation(c); err != nil {
		return conversation.Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	m.mu.Lock()
	m.entries.Put(c.ID, &entry{c: c})
	m.entries.Trim()
	m.mu.Unlock()
	m.publish(c)
	return c.Clone(), nil
}

// idOf is a new chat's id: Conch's own, or on a runner the one the
// desktop gave it (a uuid no chat here has).
func (m *Manager) idOf(req CreateRequest) (string, error) {
	if req.ID == "" {
		return store.NewID(), nil
	}
	if u, err := uuid.Parse(req.ID); !m.cfg.ClientIDs || err != nil || u.String() != req.ID {
		return "", fmt.Errorf("%w: a chat's id is Conch's to give (here, the id field is not taken)", ErrInvalid)
	}
	if _, err := m.cfg.Store.Conversation(req.ID); err == nil {
		return "", fmt.Errorf("%w: a chat with id %s exists already", ErrConflict, req.ID)
	}
	return req.ID, nil
}

// folderOf is the folder a new chat works in: the request's, else the
// home; here, an absolute folder that exists; on a host, one there.
func (m *Manager) folderOf(req CreateRequest) (string, error) {
	cwd := req.Cwd
	if req.Host != "" {
		switch {
		case cwd == "":
			return "~", nil
		case !remote.HostFolder(cwd):
		case strings.HasPrefix(cwd, "/"):
			return filepath.Clean(cwd), nil
		default:
			return cwd, nil
		}
		return "", fmt.Errorf("%w: folder %q on %s is neither ~, ~/… nor an absolute path", ErrInvalid, cwd, req.Host)
	}
	if cwd == "" {
		cwd = m.cfg.Home
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("%w: folder %q is not an absolute path", ErrInvalid, cwd)
	}
	cwd = filepath.Clean(cwd)
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: folder %s does not exist", ErrInvalid, cwd)
	}
	return cwd, nil
}

func (m *Manager) checkOpen() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.life.Open() {
		return errors.New("chats are not running (Conch is starting or closing)")
	}
	return nil
}

func (m *Manager) checkProvider(id string) error {
	if id == "" {
		return nil
	}
	if _, ok := m.cfg.Providers.Provider(id); !ok {
		known := strings.Join(m.cfg.Providers.IDs(), ", ")
		if known == "" {
			known = "none is connected yet"
		}
		return fmt.Errorf("%w: unknown provider %q (connected: %s)", ErrInvalid, id, known)
	}
	return nil
}

func checkLimit(l float64) error {
	if l < 0 || math.IsNaN(l) || math.IsInf(l, 0) {
		return fmt.Errorf("%w: limit must be 0 (none) or a positive amount of USD", ErrInvalid)
	}
	return nil
}
