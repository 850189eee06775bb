// Package routine keeps the routines (SPEC §7): a prompt or a shell
// command on a schedule, in a folder, mode and provider. It checks a
// routine at the edge, keeps the records (through the store), and its
// scheduler starts each run that comes due as a task in a chat of its own
// (origin routine), through a Launcher (the hand-off engine). A run's
// powers are exactly the routine's: its mode and its folder, on its
// provider; it has no chat above it to be narrower than, so nothing widens
// them, and it is not given the hand-off tools (a run starts no tasks of
// its own). Two runs of one routine never overlap: one that comes due
// while the last still works is skipped, and the card says so.
package routine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // a zone by name works where the OS has no zone files (Windows)

	"conch/backend/engine"
	"conch/backend/errcode"
	"conch/backend/startstop"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// The errors the operations return, with the codes the surfaces map.
var (
	// ErrInvalid is returned for a routine that can never run as written.
	ErrInvalid = errcode.ErrInvalid
	// ErrConflict is returned when the routine's state does not allow the
	// change now (its last run still works, a stale rev).
	ErrConflict = errcode.ErrConflict
	// ErrNotFound is returned when no routine has the id.
	ErrNotFound = errcode.New(errcode.NotFound, "no such routine")
)

// Routine is the stored record.
type Routine = store.Routine

// Store is where routines live (*store.Bolt).
type Store interface {
	Routines() ([]store.Routine, error)
	PutRoutine(r store.Routine) error
	DeleteRoutine(id string) error
}

// Tasks reads a run's task (*taskrun.Runner).
type Tasks interface {
	Get(id string) (task.Task, error)
}

// Engines says which providers are connected (engine.Lookup).
type Engines interface {
	All(ctx context.Context) []engine.Engine
}

// Run is one run to start: the routine's prompt or command, in its
// folder and mode, on its provider.
type Run struct {
	RoutineID string
	Name      string
	Kind      store.RoutineKind
	Text      string
	Provider  string
	Model     string
	Mode      task.Mode
	Cwd       string
}

// Launcher starts a run as a task in a chat of its own (*handoff.Service).
type Launcher interface {
	StartRoutine(ctx context.Context, r Run) (task.Task, error)
}

// Clock is the time the scheduler keeps; tests give it their own.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config wires a Service.
type Config struct {
	Store   Store
	Tasks   Tasks
	Engines Engines // nil: providers are not checked
	Clock   Clock   // nil: the real one
	// Location is the person's time zone for routines that name none
	// (nil: the machine's own).
	Location *time.Location
	// Home is the folder a routine works in when given none.
	Home string
	// Seconds lets a schedule have a leading seconds field. Only tests
	// set it, to see a real routine run twice without waiting minutes.
	Seconds bool
	Log     *slog.Logger
}

// Service keeps the routines and runs them when they come due. Its
// operations are serialised: each takes effect whole or is refused.
type Service struct {
	cfg Config

	mu       sync.Mutex // guards the fields below
	launch   Launcher
	routines map[string]*store.Routine
	life     startstop.State
	wake     chan struct{} // capacity 1: the routines changed
}

// New returns the service; it runs nothing until Start.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Service{cfg: cfg, routines: map[string]*store.Routine{}, wake: make(chan struct{}, 1)}
}

// RunWith gives the service what starts its runs (the hand-off engine is
// made after it, for it offers schedule_routine); call it before Start.
func (s *Service) RunWith(l Launcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launch = l
}

// LastRun is how the newest run went, read from its task.
type LastRun struct {
	TaskID         string      `json:"taskId"`
	ConversationID string      `json:"conversationId"`
	Status         task.Status `json:"status"`
	At             time.Time   `json:"at"`
	Summary        string      `json:"summary,omitempty"`
	Error          string      `json:"error,omitempty"`
}

// Card is a routine as its card shows it: the record, its schedule in
// plain words, its next run (nil while paused) and how the last went.
type Card struct {
	Routine store.Routine `json:"routine"`
	// Words is the schedule in plain words ("" when it has no short form).
	Words string `json:"words"`
	// Zone is the time zone its schedule is read in ("Europe/Paris").
	Zone string     `json:"zone"`
	Next *time.Time `json:"next"`
	Last *LastRun   `json:"last"`
}

// List is every routine, oldest first, and the zone a routine that names
// none is read in.
type List struct {
	Routines []Card `json:"routines" ts:"notnull"`
	Zone     string `json:"zone"`
}

// CreateRequest is a new routine (POST /api/routines). Schedule is plain
// words or cron; Kind is prompt (the default) or command.
type CreateRequest struct {
	Name     string            `json:"name,omitempty"`
	Kind     store.RoutineKind `json:"kind,omitempty"`
	Text     string            `json:"text"`
	Schedule string            `json:"schedule"`
	TimeZone string            `json:"timeZone,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Mode     string            `json:"mode,omitempty"`
	Provider string            `json:"provider,omitempty"`
	Model    string            `json:"model,omitempty"`
	Host     string            `json:"host,omitempty"`
	CatchUp  bool              `json:"catchUp,omitempty"`
	Paused   bool              `json:"paused,omitempty"`
	// FromConversationID is the chat it was made from, if any.
	FromConversationID string `json:"-"`
}

// PatchRequest changes the fields sent (PATCH /api/routines/:id); Paused
// pauses and resumes. Rev, when sent, must be the routine's: a change made
// on an older copy is refused with a conflict.
type PatchRequest struct {
	Name     *string            `json:"name,omitempty"`
	Kind     *store.RoutineKind `json:"kind,omitempty"`
	Text     *string            `json:"text,omitempty"`
	Schedule *string            `json:"schedule,omitempty"`
	TimeZone *string            `json:"timeZone,omitempty"`
	Cwd      *string            `json:"cwd,omitempty"`
	Mode     *string            `json:"mode,omitempty"`
	Provider *string            `json:"provider,omitempty"`
	Model    *string            `json:"model,omitempty"`
	Host     *string            `json:"host,omitempty"`
	CatchUp  *bool              `json:"catchUp,omitempty"`
	Paused   *bool              `json:"paused,omitempty"`
	Rev      *int64             `json:"rev,omitempty"`
}

// check validates r at the edge and fills in what it implies (the cron
// form, the shell for a command, the default mode and folder).
func (s *Service) check(ctx context.Context, r *store.Routine) error {
	r.Name = strings.TrimSpace(r.Name)
	if r.Name == "" {
		r.Name = task.TitleFrom(r.Text)
	}
	if err := taskrun.ValidateText(r.Text, r.Name); err != nil {
		return err
	}
	sched, err := Parse(r.Schedule, s.cfg.Seconds)
	if err != nil {
		return err
	}
	r.Schedule = sched.Cron
	if r.TimeZone != "" {
		if _, err := s.zone(r.TimeZone); err != nil {
			return err
		}
	}
	if r.Host != "" {
		return fmt.Errorf("%w: routines run on this computer only for now; leave host out", ErrInvalid)
	}
	if r.Mode == "" {
		r.Mode = task.Ask
	}
	if !r.Mode.Valid() {
		return fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, r.Mode)
	}
	if err := s.checkFolder(r); err != nil {
		return err
	}
	return s.checkProvider(ctx, r)
}

func (s *Service) checkFolder(r *store.Routine) error {
	if r.Cwd == "" {
		r.Cwd = s.cfg.Home
	}
	if !filepath.IsAbs(r.Cwd) {
		return fmt.Errorf("%w: folder %q is not an absolute path", ErrInvalid, r.Cwd)
	}
	r.Cwd = filepath.Clean(r.Cwd)
	if fi, err := os.Stat(r.Cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: folder %s does not exist", ErrInvalid, r.Cwd)
	}
	return nil
}

// checkProvider gives a command the shell and a prompt a connected
// provider that can ask before it acts (a model of its, when named).
func (s *Service) checkProvider(ctx context.Context, r *store.Routine) error {
	switch r.Kind {
	case "":
		r.Kind = store.RoutinePrompt
	case store.RoutinePrompt, store.RoutineCommand:
	default:
		return fmt.Errorf("%w: unknown kind %q (prompt or command)", ErrInvalid, r.Kind)
	}
	if len(r.Model) > taskrun.MaxTitle || len(r.Provider) > taskrun.MaxTitle {
		return fmt.Errorf("%w: provider and model must be under %d bytes", ErrInvalid, taskrun.MaxTitle)
	}
	if r.Kind == store.RoutineCommand {
		if r.Provider != "" && r.Provider != task.ShellProvider {
			return fmt.Errorf("%w: a command runs on the shell; leave provider out, or make it a prompt", ErrInvalid)
		}
		r.Provider, r.Model = task.ShellProvider, ""
		return nil
	}
	if r.Provider == "" {
		return fmt.Errorf("%w: a prompt needs a provider to answer it (a provider's id)", ErrInvalid)
	}
	if r.Provider == task.ShellProvider {
		return fmt.Errorf("%w: the shell runs commands, not prompts; make it a command", ErrInvalid)
	}
	if s.cfg.Engines == nil {
		return nil
	}
	e, err := engine.Pick(s.cfg.Engines.All(ctx), r.Provider, "", true)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	r.Provider = e.ID
	if r.Model != "" {
		if _, err := engine.ModelFor(e, r.Model, e.ID, r.Model); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	return nil
}

// zone is the location of a zone name ("" is the person's own).
func (s *Service) zone(name string) (*time.Location, error) {
	if name == "" {
		return s.cfg.Location, nil
	}
	if name == "Local" || len(name) > 64 {
		return nil, fmt.Errorf("%w: unknown time zone %q (a name such as Europe/Paris; leave it out for this computer's own)", ErrInvalid, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: unknown time zone %q (a name such as Europe/Paris; leave it out for this computer's own)", ErrInvalid, name)
	}
	return loc, nil
}

// ZoneName is the name of loc as a person knows it: its IANA name when
// known ("Europe/Paris"), else its abbreviation now.
func ZoneName(loc *time.Location) string {
	if n := loc.String(); n != "Local" && n != "" {
		return n
	}
	if tz := os.Getenv("TZ"); tz != "" {
		return strings.TrimPrefix(tz, ":")
	}
	if link, err := os.Readlink("/etc/localtime"); err == nil {
		if _, after, ok := strings.Cut(link, "zoneinfo/"); ok {
			return after
		}
	}
	name, _ := time.Now().In(loc).Zone()
	return name
}
