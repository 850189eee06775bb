// Package host keeps the hosts: other computers Conch reaches over SSH
// (SPEC §6). It owns their records (add, change, remove), tests a
// connection (who Conch runs as there, the system, the Conch runner and
// the coding-agent CLIs found), and holds every connection to a host whose
// key is unknown until the person accepts that exact key.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"conch/backend/errcode"
	"conch/backend/event"
	"conch/backend/pref"
	"conch/backend/remote/ssh"
	"conch/backend/startstop"
	"conch/backend/store"
)

var (
	// ErrInvalid is returned for a host that could never be reached as
	// written.
	ErrInvalid = errcode.ErrInvalid
	// ErrConflict is returned when the host's state does not allow the
	// change now (a stale rev, a key that is not the one waiting).
	ErrConflict = errcode.ErrConflict
	// ErrNotFound is returned when no host has the id.
	ErrNotFound = errcode.New(errcode.NotFound, "no such host")
)

// errClosed is an operation asked for when Conch is not keeping hosts.
var errClosed = errors.New("hosts are not being kept now (Conch is starting or closing)")

// DefaultLimits are a new host's: 3 background tasks and 4 helpers at once.
var DefaultLimits = pref.Limits{Background: 3, Helper: 4}

// Keeper is where hosts are stored (*store.Bolt).
type Keeper interface {
	Hosts() ([]store.Host, error)
	PutHost(h store.Host) error
	DeleteHost(id string) error
}

// Config wires a Service.
type Config struct {
	Store Keeper
	SSH   *ssh.Client
	// Version is the runner's version this Conch would start on a host.
	Version string
	// Bus, if set, hears of every change (host.changed).
	Bus *event.Bus
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Service keeps the hosts. Every change is stored before it is kept.
type Service struct {
	cfg Config

	mu    sync.Mutex
	life  startstop.State
	hosts map[string]*store.Host
	// accepted is closed, and replaced, when a host's key is accepted,
	// waking the connections that wait for it.
	accepted map[string]chan struct{}
	// accepts counts each host's accepted keys, so a test that met the
	// unknown key before an accept does not put it back as unknown.
	accepts map[string]uint64
	// probed, when set (tests), runs after a test's connection and before
	// what it met is stored: where an accept can come in between.
	probed func()
}

// New returns a Service; Start loads the stored hosts.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Service{cfg: cfg, hosts: map[string]*store.Host{}, accepted: map[string]chan struct{}{}, accepts: map[string]uint64{}}
}

// Start loads the hosts from the store.
func (s *Service) Start(ctx context.Context) error {
	hs, err := s.cfg.Store.Hosts()
	if err != nil && len(hs) == 0 {
		return fmt.Errorf("start hosts: %w", err)
	} else if err != nil {
		s.cfg.Log.Error("some hosts could not be read", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.life.Start(ctx); err != nil {
		return fmt.Errorf("start hosts: %w", err)
	}
	for _, h := range hs {
		s.hosts[h.ID] = &h
	}
	return nil
}

// Stop ends the shared connections to every host; safe twice and before
// Start.
func (s *Service) Stop() {
	s.mu.Lock()
	var targets []ssh.Target
	if s.life.Open() && s.cfg.SSH != nil {
		for _, h := range s.hosts {
			if t, err := ssh.ParseTarget(h.Target); err == nil {
				targets = append(targets, t)
			}
		}
	}
	s.mu.Unlock()
	s.life.Stop(&s.mu, nil)
	for _, t := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.cfg.SSH.Close(ctx, t)
		cancel()
	}
}

// List is every host, oldest first.
type List struct {
	Hosts []store.Host `json:"hosts"`
	// Runner is the runner's version this Conch would start on a host.
	Runner string `json:"runner"`
}

// PutRequest adds a host or changes one (PUT /api/hosts/:id). Without Rev
// it only adds: a host that exists already is a conflict. With Rev it
// changes the host whose rev that is.
type PutRequest struct {
	// Name is what the person calls it ("": the id).
	Name   string       `json:"name,omitempty"`
	Target string       `json:"target"`
	Limits *pref.Limits `json:"limits,omitempty"`
	// Models, when sent, are the API-model providers allowed to carry
	// tasks there (the person's OK, per host); the caller checks they are
	// connected.
	Models *[]string `json:"models,omitempty"`
	Rev    *int64    `json:"rev,omitempty"`
}

var hostID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// List returns every host, oldest first.
func (s *Service) List() (List, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.life.Open() {
		return List{}, errClosed
	}
	l := List{Hosts: []store.Host{}, Runner: s.cfg.Version}
	for _, h := range s.hosts {
		l.Hosts = append(l.Hosts, *h)
	}
	sortHosts(l.Hosts)
	return l, nil
}

// Get returns one host.
func (s *Service) Get(id string) (store.Host, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.get(id)
	if err != nil {
		return store.Host{}, err
	}
	return *h, nil
}

// get is the host with id; call with s.mu held.
func (s *Service) get(id string) (*store.Host, error) {
	if !s.life.Open() {
		return nil, errClosed
	}
	h, ok := s.hosts[id]
	if !ok {
		return nil, fmt.Errorf("host %q: %w", id, ErrNotFound)
	}
	return h, nil
}

// put stores h with its rev raised and keeps it; call with s.mu held.
func (s *Service) put(h store.Host) (store.Host, error) {
	h.Rev++
	h.UpdatedAt = s.cfg.Now().UTC()
	if err := s.cfg.Store.PutHost(h); err != nil {
		return store.Host{}, err
	}
	s.hosts[h.ID] = &h
	if s.cfg.Bus != nil {
		s.cfg.Bus.Publish(event.Event{Type: event.HostChanged, ID: h.ID})
	}
	return h, nil
}

// Put adds the host id, or changes it when req carries its rev; created
// says which.
func (s *Service) Put(id string, req PutRequest) (h store.Host, created bool, err error) {
	if !hostID.MatchString(id) {
		return store.Host{}, false, fmt.Errorf("%w: host id %q must be 1 to 40 lower-case letters, digits and dashes, starting with a letter or digit", ErrInvalid, id)
	}
	if req.Name == "" {
		req.Name = id
	}
	if len(req.Name) > 64 || !printable(req.Name) {
		return store.Host{}, false, fmt.Errorf("%w: a host's name must be 1 to 64 printable characters", ErrInvalid)
	}
	t, err := ssh.ParseTarget(req.Target)
	if err != nil {
		return store.Host{}, false, err
	}
	if req.Limits != nil {
		if err := checkLimits(*req.Limits); err != nil {
			return store.Host{}, false, err
		}
	}
	if req.Models != nil {
		if err := checkModels(*req.Models); err != nil {
			return store.Host{}, false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.life.Open() {
		return store.Host{}, false, errClosed
	}
	for _, o := range s.hosts {
		if o.ID != id && o.Name == req.Name {
			return store.Host{}, false, fmt.Errorf("%w: another host (%s) is called %q already; pick another name", ErrConflict, o.ID, req.Name)
		}
	}
	cur, ok := s.hosts[id]
	switch {
	case !ok && req.Rev != nil:
		return store.Host{}, false, fmt.Errorf("host %q: %w (it may have been removed)", id, ErrNotFound)
	case ok && req.Rev == nil:
		return store.Host{}, false, fmt.Errorf("%w: host %q exists already; send its rev (%d) to change it", ErrConflict, id, cur.Rev)
	case ok && *req.Rev != cur.Rev:
		return store.Host{}, false, fmt.Errorf("%w: host %q changed since you read it (rev %d, now %d); reload it and try again", ErrConflict, id, *req.Rev, cur.Rev)
	}
	var next store.Host
	if ok {
		next = *cur
		if next.Target != t.String() {
			// Another computer: what was found on the old one says
			// nothing of it.
			// Nor does the OK given for it.
			next = store.Host{ID: id, Limits: cur.Limits, CreatedAt: cur.CreatedAt, Rev: cur.Rev, Status: store.HostNew, Providers: []store.HostProvider{}, Models: []string{}}
		}
	} else {
		next = store.Host{ID: id, Status: store.HostNew, Limits: DefaultLimits, Providers: []store.HostProvider{}, Models: []string{}, CreatedAt: s.cfg.Now().UTC()}
	}
	next.Name, next.Target = req.Name, t.String()
	if req.Limits != nil {
		next.Limits = *req.Limits
	}
	if req.Models != nil {
		next.Models = slices.Clone(*req.Models)
	}
	if next.Models == nil {
		next.Models = []string{}
	}
	h, err = s.put(next)
	if err != nil {
		return store.Host{}, false, fmt.Errorf("put host %s: %w", id, err)
	}
	return h, !ok, nil
}

// Delete removes a host and ends its shared connection. Conch's
// known_hosts keeps the key it accepted.
func (s *Service) Delete(id string) error {
	s.mu.Lock()
	h, err := s.get(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	target := h.Target
	if err := s.cfg.Store.DeleteHost(id); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("remove host %s: %w", id, err)
	}
	delete(s.hosts, id)
	delete(s.accepts, id)
	if s.cfg.Bus != nil {
		s.cfg.Bus.Publish(event.Event{Type: event.HostChanged, ID: id})
	}
	s.wake(id)
	s.mu.Unlock()
	if t, err := ssh.ParseTarget(target); err == nil && s.cfg.SSH != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.cfg.SSH.Close(ctx, t)
	}
	return nil
}

// checkModels checks the OK list of a host: provider ids, each once.
func checkModels(ids []string) error {
	if len(ids) > 32 {
		return fmt.Errorf("%w: at most 32 providers may be allowed on a host", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || len(id) > 64 || !printable(id) || seen[id] {
			return fmt.Errorf("%w: models names each provider once, by its id", ErrInvalid)
		}
		seen[id] = true
	}
	return nil
}

func checkLimits(l pref.Limits) error {
	if l.Background < 1 || l.Background > 64 || l.Helper < 1 || l.Helper > 64 {
		return fmt.Errorf("%w: a host runs 1 to 64 background tasks and 1 to 64 helpers at once, not %d and %d", ErrInvalid, l.Background, l.Helper)
	}
	return nil
}

func printable(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
