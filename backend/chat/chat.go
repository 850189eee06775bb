package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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
