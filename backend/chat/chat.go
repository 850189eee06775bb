package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"conch/backend/ask"
	"conch/backend/conversation"
	"conch/backend/event"
	"conch/backend/internal/refcache"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/procmark"
	"conch/backend/provider"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/tool"
)

// Defaults of Config.
const (
	// StepLimit is how many provider calls one turn may make.
	StepLimit = 50
	// DeltaInterval is how often streamed text is published: pieces that
	// arrive in between are sent together.
	DeltaInterval = 50 * time.Millisecond
)

// stopGrace is how long Stop waits for a turn to end before answering.
const stopGrace = 5 * time.Second

// Bounds on what a person sends.
const (
	maxText  = 256 << 10
	maxTitle = 200
	// pageMax is the most messages one Get returns.
	pageMax = 500
	// pageDefault is how many messages Get returns when not told.
	pageDefault = 100
)

// Spending is the monthly budget and the price table in force now.
type Spending interface {
	// Prices is the price table now.
	Prices() map[string]pref.Price
	// Exceeded says why nothing more may be spent this month ("" if it may).
	Exceeded() (string, error)
	// Spend adds usd to this month.
	Spend(usd float64) error
}

// Config wires a Manager.
type Config struct {
	Store     store.Conversations
	Bus       *event.Bus
	Providers provider.Registry
	// Tools are the host tools offered to models (default tool.Host()).
	Tools tool.Set
	// Logs keeps each chat's command log, <root>/<conversation id>/output.log
	// (nil: commands are not logged).
	Logs *output.Logs
	// Prices price provider usage (default DefaultPrices()) when Spending
	// is nil.
	Prices Prices
	// Spending, when set, prices usage from the preferences and keeps the
	// monthly budget across every chat.
	Spending Spending
	// Home is the folder a chat without cwd works in.
	Home string
	// HTTP is the client fetch_url uses (nil: public addresses only).
	HTTP *http.Client
	// StepLimit overrides StepLimit.
	StepLimit int
	// AskTimeout overrides ask.Timeout (tests).
	AskTimeout time.Duration
	// DeltaInterval overrides DeltaInterval.
	DeltaInterval time.Duration
	// CommandGrace is how long a command has after SIGTERM (default 2 s).
	CommandGrace time.Duration
	// Now overrides time.Now (tests).
	Now func() time.Time
	// HomeMark names this home: every command a chat runs carries it (with
	// the chat's id, and its task's), so healing finds what a Conch that
	// died left running (procmark).
	HomeMark string
	// Reap ends what an earlier Conch left running for a chat (nil:
	// procmark.Reap).
	Reap func(m procmark.Mark)
	// Limit, when set, decides whether a chat has spent what it may, in
	// place of its own limit (OwnLimit): a task's chat spends as part of
	// the chat it came from and its job. The monthly budget holds besides.
	Limit func(c conversation.Conversation) *SpendLimitError
	// Log records what the person cannot act on (a recovered panic's
	// stack); nil discards it.
	Log *slog.Logger
	// ClientIDs lets a new chat's request name its id (a host's runner,
	// whose desktop gives its chats the ids they have there).
	ClientIDs bool
}

// Manager owns every conversation's live state and runs their turns. Start
// it once, Stop it once (Stop is safe twice and before Start).
type Manager struct {
	cfg Config
	// extra are the hand-off tools and prompt (Offer); nil: none.
	extra ToolSource
	// hosts carry the person's chats on hosts to their twins (UseHosts);
	// guarded by mu.
	hosts HostChats
	// idMu makes a given id's look and take one step (Create).
	idMu sync.Mutex

	mu sync.Mutex // guards the fields below
	// entries holds the conversations someone is using (a turn, a call
	// in progress) and a bounded cache of others (see acquire): most
	// conversations are finished tasks' chats, read from the store when
	// asked for, so memory does not grow with them. A turn holds its
	// entry, so nothing replying or asking is ever dropped.
	entries *refcache.Cache[string, *entry]
	// life is started by Start and ended by Stop; every turn is counted
	// in life.WG.
	life startstop.State
}

// entry is the live state of one conversation; mu orders its changes.
type entry struct {
	// refs counts who holds it: a held entry is never dropped from the
	// cache, so no change is ever made through an entry that is not the
	// conversation's only one. It is raised under Manager.mu by acquire,
	// or by hold from one who holds it already. used (guarded by
	// Manager.mu) is when it was last acquired.
	refcache.Counted

	mu     sync.Mutex
	c      conversation.Conversation
	cancel context.CancelCauseFunc // set while a turn runs
	done   chan struct{}           // closed when the running turn ends
	ask    *pending                // the question waiting for an answer
	behalf *Behalf                 // set while RunFor runs a turn for someone
	fwd    string                  // the question answered through the task
	wake   bool                    // a wake came in while a turn ran
	// began and spentFrom are when the running turn began and what the
	// chat had spent then (Activity's record of it).
	began     time.Time
	spentFrom float64
	resume    string // a resumed task's notice, for its next turn
	left      string // a resumed task's log as its last run left it
	tell      string // what a task's next turn is told first
}

// pending is a question a turn waits on.
type pending struct {
	id     string
	answer chan bool // capacity 1
}

var (
	errStopped = ErrStopped
	errClosing = errors.New("conch is closing")
)

// New returns a manager; call Start before use.
func New(cfg Config) *Manager {
	if cfg.Tools == nil {
		cfg.Tools = tool.Host()
	}
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices()
	}
	if cfg.Providers == nil {
		cfg.Providers = provider.Fixed{}
	}
	if cfg.StepLimit <= 0 {
		cfg.StepLimit = StepLimit
	}
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = ask.Timeout
	}
	if cfg.DeltaInterval <= 0 {
		cfg.DeltaInterval = DeltaInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Reap == nil {
		cfg.Reap = func(m procmark.Mark) { procmark.Reap(m, 0) }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg}
	m.entries = refcache.New[string, *entry](&m.mu, cacheSize, nil)
	return m
}

// ToolSource gives a turn of c what it has beyond the host tools: the
// hand-off tools (start_background_task, delegate) in the person's chats,
// and the words that go with them in the system prompt.
type ToolSource interface {
	Tools(c conversation.Conversation) []tool.Tool
	Prompt(ctx context.Context, c conversation.Conversation) string
}

// Offer gives the chats src's tools and prompt. The hand-off engine starts
// tasks in chats of this manager, so it is made after it and offered here,
// before Start.
func (m *Manager) Offer(src ToolSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.extra = src
}

func (m *Manager) toolSource() ToolSource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.extra
}

// InterruptedNotice is said in a chat that was replying when Conch stopped.
const InterruptedNotice = "Conch stopped while this chat was replying."

// Start settles the conversations a Conch that died left replying or
// asking; the others are read from the store when they are asked for.
func (m *Manager) Start(ctx context.Context) error {
	cs, err := m.cfg.Store.UnsettledConversations()
	if err != nil {
		return fmt.Errorf("start chats: %w", err)
	}
	m.mu.Lock()
	_, err = m.life.Start(ctx)
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("start chats: %w", err)
	}
	for _, c := range cs {
		switch {
		case onHost(c):
			// Its turn went on there: follow it again.
			if h, err := m.hostChats(c); err == nil {
				h.Follow(c)
			}
		case c.Host != "":
			// A task's chat on a host: its task follows it again.
		default:
			if err := m.heal(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// heal settles c, which a Conch that died left replying or asking: what
// it left running is ended, the question is withdrawn and the chat says so.
func (m *Manager) heal(c conversation.Conversation) error {
	e, release, err := m.acquire(c.ID)
	if err != nil {
		return fmt.Errorf("heal conversation %s: %w", c.ID, err)
	}
	defer release()
	if m.cfg.HomeMark != "" {
		m.cfg.Reap(procmark.Mark{Home: m.cfg.HomeMark, Chat: c.ID})
	}
	var msgs []conversation.Message
	if c.Ask != nil {
		msgs = append(msgs, m.answerMessage(*c.Ask, ask.Stopped))
	}
	msgs = append(msgs, m.notice(InterruptedNotice))
	if _, err := m.update(e, func(c *conversation.Conversation) error {
		c.Running, c.Ask = false, nil
		return nil
	}, msgs...); err != nil {
		return fmt.Errorf("heal conversation %s: %w", c.ID, err)
	}
	return nil
}

// Stop ends every turn (each says so in its chat) and waits for them.
func (m *Manager) Stop() { m.life.Stop(&m.mu, errClosing) }

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
		case cwd == "~" || strings.HasPrefix(cwd, "~/"):
			return cwd, nil
		case filepath.IsAbs(cwd) && !strings.ContainsRune(cwd, 0):
			return filepath.Clean(cwd), nil
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

// Bounds of a page of the chat list.
const (
	ListDefault = 100
	ListMax     = 500
)

// ChatList is a page of the person's chats and the cursor of the next one
// ("" at the end).
type ChatList struct {
	Conversations []conversation.Conversation `json:"conversations" ts:"notnull"`
	Next          string                      `json:"next"`
}

// List returns a page of the person's chats (task chats excluded), the
// most recently changed first, whose titles hold every word of query:
// limit of them (0: ListDefault, at most ListMax) after cursor ("" for the
// first page; else a Next it gave).
func (m *Manager) List(query, cursor string, limit int) (ChatList, error) {
	if limit < 0 || limit > ListMax {
		return ChatList{}, fmt.Errorf("%w: limit must be between 1 and %d", ErrInvalid, ListMax)
	}
	if limit == 0 {
		limit = ListDefault
	}
	p, err := m.cfg.Store.Chats(query, cursor, limit)
	if errors.Is(err, store.ErrBadCursor) {
		return ChatList{}, fmt.Errorf("%w: cursor %q is not one this list gave (start again without it)", ErrInvalid, cursor)
	}
	if err != nil {
		return ChatList{}, fmt.Errorf("list chats: %w", err)
	}
	return ChatList{Conversations: p.Conversations, Next: p.Next}, nil
}

// Asking are the person's chats waiting for an answer (task chats' questions
// are their tasks').
func (m *Manager) Asking() ([]conversation.Conversation, error) {
	return m.cfg.Store.AskingChats()
}

// Page is a conversation with a page of its messages.
type Page struct {
	Conversation conversation.Conversation `json:"conversation"`
	// Messages are oldest first.
	Messages []conversation.Message `json:"messages" ts:"notnull"`
	// More says older messages remain: ask again with before = the first
	// message's seq.
	More bool `json:"more"`
}

// Get returns a conversation with up to limit of its messages before seq
// before (0: the newest). limit 0 means 100; at most 500.
func (m *Manager) Get(id string, before uint64, limit int) (Page, error) {
	e, release, err := m.acquire(id)
	if err != nil {
		return Page{}, err
	}
	defer release()
	if limit < 0 || limit > pageMax {
		return Page{}, fmt.Errorf("%w: limit must be between 1 and %d", ErrInvalid, pageMax)
	}
	if limit == 0 {
		limit = pageDefault
	}
	e.mu.Lock()
	c := e.c.Clone()
	e.mu.Unlock()
	if before == 0 || before > c.LastSeq+1 {
		before = c.LastSeq + 1
	}
	msgs, more, err := m.cfg.Store.Messages(id, before, limit)
	if err != nil {
		return Page{}, fmt.Errorf("get conversation %s: %w", id, err)
	}
	if msgs == nil {
		msgs = []conversation.Message{} // [] on the wire, never null
	}
	return Page{Conversation: c, Messages: msgs, More: more}, nil
}

// cacheSize is how many conversations nobody holds are kept in memory.
const cacheSize = 256

// message returns a new message of kind, not yet numbered.
func (m *Manager) message(kind conversation.Kind) conversation.Message {
	return conversation.Message{ID: uuid.NewString(), Kind: kind, CreatedAt: m.cfg.Now().UTC()}
}

func (m *Manager) notice(text string) conversation.Message {
	msg := m.message(conversation.Notice)
	msg.Text = text
	return msg
}

// answerMessage records how the question q was settled.
func (m *Manager) answerMessage(q ask.Question, ans ask.Answer) conversation.Message {
	msg := m.message(conversation.AskKind)
	q.Answer = ans
	msg.Ask = &q
	return msg
}

// update applies fn to a copy of the conversation, numbers msgs after its
// newest message, stores both in one transaction, keeps them and publishes
// them, in that order. If fn or the store fails, nothing changes.
func (m *Manager) update(e *entry, fn func(c *conversation.Conversation) error, msgs ...conversation.Message) (conversation.Conversation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return m.updateLocked(e, fn, msgs...)
}

func (m *Manager) updateLocked(e *entry, fn func(c *conversation.Conversation) error, msgs ...conversation.Message) (conversation.Conversation, error) {
	next := e.c.Clone()
	if fn != nil {
		if err := fn(&next); err != nil {
			return e.c.Clone(), err
		}
	}
	now := m.cfg.Now().UTC()
	for i := range msgs {
		next.LastSeq++
		msgs[i].Seq = next.LastSeq
		msgs[i].ConversationID = next.ID
		if msgs[i].ID == "" {
			msgs[i].ID = uuid.NewString()
		}
		if msgs[i].CreatedAt.IsZero() {
			msgs[i].CreatedAt = now
		}
	}
	next.Rev = e.c.Rev + 1
	next.UpdatedAt = now
	if err := m.cfg.Store.PutConversation(next, msgs...); err != nil {
		return e.c.Clone(), fmt.Errorf("save conversation %s: %w", next.ID, err)
	}
	e.c = next
	for i := range msgs {
		msg := msgs[i]
		m.cfg.Bus.Publish(event.Event{Type: event.MessageAdded, Message: &msg})
	}
	m.publish(next)
	return next.Clone(), nil
}

func (m *Manager) publish(c conversation.Conversation) {
	c = c.Clone()
	m.cfg.Bus.Publish(event.Event{Type: event.ConversationChanged, Conversation: &c})
}
