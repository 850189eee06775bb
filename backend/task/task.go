// Package task holds the task record, its statuses and the transition table.
//
// It is pure: no I/O, no clocks other than the ones callers pass in. The
// runner (backend/taskrun) owns the life of a task; this package only says
// what a task is and which changes are allowed.
package task

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"conch/backend/ask"
	"conch/backend/errcode"
)

// Status says where a task stands. The JSON form is the constant's value.
type Status string

const (
	// Queued waits for a free slot of its kind, first come first served.
	Queued Status = "queued"
	// Running holds a slot and is doing its work.
	Running Status = "running"
	// NeedsYou waits for the person to answer its permission question (Ask).
	NeedsYou Status = "needs-you"
	// Done finished its work; Summary and Result say what came of it.
	Done Status = "done"
	// Failed ended without finishing; Error says why.
	Failed Status = "failed"
	// Stopped was stopped by the person (or by its parent turn).
	Stopped Status = "stopped"
	// Interrupted was running or waiting on the person when Conch stopped.
	Interrupted Status = "interrupted"
)

// Statuses lists every status, in the order the tasks page groups them.
var Statuses = []Status{NeedsYou, Running, Queued, Done, Failed, Stopped, Interrupted}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, k := range Statuses {
		if s == k {
			return true
		}
	}
	return false
}

// Active reports whether a task in this status holds a slot (running or
// waiting on the person in the middle of its run).
func (s Status) Active() bool { return s == Running || s == NeedsYou }

// Finished reports whether a task in this status has ended and can be retried.
func (s Status) Finished() bool {
	return s == Done || s == Failed || s == Stopped || s == Interrupted
}

// Kind says why a task exists.
type Kind string

const (
	// Background is work the person (or the assistant, asked to) sent away.
	Background Kind = "background"
	// Helper is one part of a delegate call, run side by side with its siblings.
	Helper Kind = "helper"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == Background || k == Helper }

// Mode is the permission level a task runs in; never wider than its chat's.
type Mode string

const (
	// Plan is read only: side effects are refused.
	Plan Mode = "plan"
	// Ask asks before every side effect.
	Ask Mode = "ask"
	// Edits lets file edits run and asks before commands and network.
	Edits Mode = "edits"
	// Auto asks before nothing.
	Auto Mode = "auto"
)

// Modes lists the modes from the narrowest to the widest.
var Modes = []Mode{Plan, Ask, Edits, Auto}

// Wider reports whether m allows more than other (auto is wider than edits,
// edits than ask, ask than plan).
func (m Mode) Wider(other Mode) bool { return m.rank() > other.rank() }

func (m Mode) rank() int {
	for i, k := range Modes {
		if m == k {
			return i
		}
	}
	return -1
}

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	for _, k := range Modes {
		if m == k {
			return true
		}
	}
	return false
}

// Wake says whether the parent chat was told of the task's result.
type Wake string

const (
	// WakeNone is for tasks that wake nobody (the person started them).
	WakeNone Wake = "none"
	// WakePending means the parent's assistant still owes a turn on the result.
	WakePending Wake = "pending"
	// WakeSent means the parent was told.
	WakeSent Wake = "sent"
)

// ResultSource says where a result came from.
type ResultSource string

const (
	// SourceReport came from the report_result tool.
	SourceReport ResultSource = "report"
	// SourceTurn is the last reply of a turn that ended without a report.
	SourceTurn ResultSource = "turn"
	// SourceExit came from a process that ended (shell tasks).
	SourceExit ResultSource = "exit"
	// SourceCheck was verified by the task's check command.
	SourceCheck ResultSource = "check"
)

// Result is what a finished task produced.
type Result struct {
	Text   string       `json:"text"`
	Source ResultSource `json:"source"`
	At     time.Time    `json:"at"`
}

// WorktreeWork is what a helper's worktree holds that its base lacks.
type WorktreeWork struct {
	Changed   int    `json:"changed"`
	Untracked int    `json:"untracked"`
	Ahead     int    `json:"ahead"`
	Behind    int    `json:"behind"`
	Operation string `json:"operation,omitempty"`
}

// Salvage is what a helper that did not finish left in its worktree:
// its uncommitted changes saved as a commit on Ref
// (refs/conch/salvage/<task id>; empty when nothing was uncommitted), the
// files they touch, and the commits its branch has beyond its base.
type Salvage struct {
	Ref     string   `json:"ref,omitempty"`
	Commit  string   `json:"commit,omitempty"`
	Files   []string `json:"files,omitempty"`
	Commits []string `json:"commits,omitempty"`
}

// Worktree is a helper's own git worktree.
type Worktree struct {
	Path   string       `json:"path"`
	Branch string       `json:"branch"`
	Base   string       `json:"base"`
	Kept   bool         `json:"kept"`
	Work   WorktreeWork `json:"work"`
	// Salvage is set when the helper ended interrupted, failed or stopped
	// with work in its worktree.
	Salvage *Salvage `json:"salvage,omitempty"`
	// Overlap names the files this helper changed that other helpers of
	// its group changed too, set when the group has settled, so the card
	// says so before the person merges.
	Overlap []Overlap `json:"overlap,omitempty"`
}

// Overlap is one file two or more helpers of a group changed in their
// worktrees (committed on their branches, or not yet).
type Overlap struct {
	// File is a slash path from the repository's top.
	File string `json:"file"`
	// With are the other helpers' task ids, in part order.
	With []string `json:"with"`
}

// Paused is set while a task waits out a provider limit.
type Paused struct {
	Kind  string    `json:"kind"`
	Until time.Time `json:"until,omitzero"`
}

// Resume says a queued task carries on from where it stopped, with its
// chat's whole transcript, instead of starting over.
type Resume struct {
	// From is the status it was resumed from: interrupted, failed or
	// stopped.
	From Status `json:"from"`
	// Reason is the error it had then, if any.
	Reason string `json:"reason,omitempty"`
	// LastStep is the last thing it did.
	LastStep string    `json:"lastStep,omitempty"`
	At       time.Time `json:"at"`
}

// ShellProvider is the built-in shell's provider id: a command's, and a
// chat's that runs each message as a command.
const ShellProvider = "shell"

// Resumable reports why t cannot resume, or "" when it can: a chat task
// that was interrupted, failed or stopped.
func (t Task) Resumable() string {
	switch {
	case t.ConversationID == "":
		return "a command cannot carry on from where it stopped; Try again runs it again from the start"
	case t.Provider == ShellProvider:
		// A chat on the shell runs each message as a command: it would run
		// the notice that tells it to carry on.
		return "the shell cannot carry on from where it stopped; Try again runs the command again from the start"
	case t.Status == Done:
		return "it is done; Try again runs it again from the start"
	case t.Status != Interrupted && t.Status != Failed && t.Status != Stopped:
		return "it is " + t.Status.Words() + ", so it cannot be resumed"
	}
	return ""
}

// MaxSteps is how many past steps a task keeps.
const MaxSteps = 12

// Task is the record of where one task stands. The API, the Wails bindings
// and the store all use this shape.
type Task struct {
	ID                   string `json:"id"`
	Kind                 Kind   `json:"kind"`
	Status               Status `json:"status"`
	Title                string `json:"title"`
	Text                 string `json:"text"`
	ConversationID       string `json:"conversationId"`
	ParentConversationID string `json:"parentConversationId"`
	GroupID              string `json:"groupId"`
	// Part and Parts place a helper in its group ("helper 2 of 3").
	Part     int    `json:"part,omitempty"`
	Parts    int    `json:"parts,omitempty"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	By       string `json:"by"`
	Mode     Mode   `json:"mode"`
	Cwd      string `json:"cwd"`
	// Host is the id of the host (another computer, SPEC §6) the task
	// runs on; empty on this computer. Its Cwd is a folder there.
	Host string `json:"host"`
	// Check is a command that must pass, in the task's folder, before the
	// task is done; CheckRetries is how many more turns its model gets to
	// make a failing check pass.
	Check        string        `json:"check"`
	CheckRetries int           `json:"checkRetries,omitempty"`
	Current      string        `json:"current"`
	Steps        []string      `json:"steps"`
	Summary      string        `json:"summary"`
	Error        string        `json:"error"`
	Note         string        `json:"note"`
	Result       *Result       `json:"result"`
	Ask          *ask.Question `json:"ask"`
	Worktree     *Worktree     `json:"worktree"`
	// WantsWorktree is a helper on a host that asked for a worktree of its
	// own: its host's runner makes it there, and Worktree says what it is
	// once made.
	WantsWorktree bool    `json:"wantsWorktree,omitempty"`
	Wake          Wake    `json:"wake"`
	Notified      bool    `json:"notified"`
	Paused        *Paused `json:"paused"`
	// Estimate is what the part was guessed to cost to start, and Cap what
	// its job (a delegate's helpers together) may spend, in USD.
	Estimate float64 `json:"estimate,omitempty"`
	Cap      float64 `json:"cap,omitempty"`
	// Resume is set while a run carries on from where the last one
	// stopped (and stays, saying so, once it ran); Retry clears it.
	Resume      *Resume `json:"resume"`
	OutputBytes int64   `json:"outputBytes"`
	ExitCode    *int    `json:"exitCode"`
	// RoutineID is the routine whose run this is, if any (SPEC §7).
	RoutineID string `json:"routineId,omitempty"`
	// Pid is the process group of the task's process while one runs; healing
	// at start ends a group left behind by a Conch that died.
	Pid       int        `json:"pid"`
	CreatedAt time.Time  `json:"createdAt"`
	StartedAt *time.Time `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"`
	Rev       int64      `json:"rev"`
}

// ErrInvalidTransition is returned when a status change is not in the table.
var ErrInvalidTransition = errcode.New(errcode.InvalidTransition, "invalid status change")

// TransitionError is a refused status change. It matches
// ErrInvalidTransition, and its text is a sentence a person can read
// ("it is working, so it cannot be tried again").
type TransitionError struct {
	ID       string
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("it is %s, so it cannot be %s", e.From.Words(), becoming[e.To])
}

// Unwrap makes errors.Is(err, ErrInvalidTransition) hold, and gives the
// error its code.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// becoming says what moving a task to a status does, in the person's words.
var becoming = map[Status]string{
	Queued:      "tried again",
	Running:     "started",
	NeedsYou:    "asked a question",
	Done:        "marked done",
	Failed:      "marked failed",
	Stopped:     "stopped",
	Interrupted: "marked interrupted",
}

// words are the statuses as the person reads them (UI.md's status language).
var words = map[Status]string{
	Queued:      "waiting",
	Running:     "working",
	NeedsYou:    "waiting for your OK",
	Done:        "done",
	Failed:      "finished without success",
	Stopped:     "stopped",
	Interrupted: "interrupted",
}

// Words is the status as a person reads it in a sentence ("working").
func (s Status) Words() string {
	if w, ok := words[s]; ok {
		return w
	}
	return string(s)
}

// transitions is the whole table: from → the statuses it may go to.
var transitions = map[Status][]Status{
	Queued:      {Running, Stopped, Failed},
	Running:     {NeedsYou, Done, Failed, Stopped, Interrupted},
	NeedsYou:    {Running, Failed, Stopped, Interrupted},
	Done:        {Queued},
	Failed:      {Queued},
	Stopped:     {Queued},
	Interrupted: {Queued},
}

// CanTransition reports whether a task may go from one status to another.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// SetStatus moves t to status to, stamping StartedAt and EndedAt, or returns
// an error wrapping ErrInvalidTransition and leaves t as it was.
func (t *Task) SetStatus(to Status, now time.Time) error {
	if !CanTransition(t.Status, to) {
		return &TransitionError{ID: t.ID, From: t.Status, To: to}
	}
	switch {
	case to == Queued:
		t.StartedAt, t.EndedAt = nil, nil
	case to == Running && t.StartedAt == nil:
		at := now
		t.StartedAt = &at
	case to.Finished():
		at := now
		t.EndedAt = &at
		t.Current = ""
		t.Ask = nil
		t.Pid = 0
	}
	t.Status = to
	return nil
}

// AddStep appends a past-tense step, keeping the last MaxSteps.
func (t *Task) AddStep(step string) {
	t.Steps = append(t.Steps, step)
	if n := len(t.Steps); n > MaxSteps {
		t.Steps = append([]string(nil), t.Steps[n-MaxSteps:]...)
	}
}

// Clone returns a deep copy, safe to hand to another goroutine.
func (t Task) Clone() Task {
	c := t
	c.Steps = append([]string(nil), t.Steps...)
	if t.Result != nil {
		r := *t.Result
		c.Result = &r
	}
	if t.Ask != nil {
		a := *t.Ask
		c.Ask = &a
	}
	if t.Worktree != nil {
		w := *t.Worktree
		if w.Overlap != nil {
			w.Overlap = make([]Overlap, len(t.Worktree.Overlap))
			for i, o := range t.Worktree.Overlap {
				w.Overlap[i] = Overlap{File: o.File, With: append([]string(nil), o.With...)}
			}
		}
		if w.Salvage != nil {
			sv := *w.Salvage
			sv.Files = append([]string(nil), sv.Files...)
			sv.Commits = append([]string(nil), sv.Commits...)
			w.Salvage = &sv
		}
		c.Worktree = &w
	}
	if t.Paused != nil {
		p := *t.Paused
		c.Paused = &p
	}
	if t.Resume != nil {
		r := *t.Resume
		c.Resume = &r
	}
	if t.ExitCode != nil {
		e := *t.ExitCode
		c.ExitCode = &e
	}
	if t.StartedAt != nil {
		s := *t.StartedAt
		c.StartedAt = &s
	}
	if t.EndedAt != nil {
		e := *t.EndedAt
		c.EndedAt = &e
	}
	return c
}

// TitleFrom derives a short title from a task's text: its first line, cut
// at a word boundary near 60 characters.
func TitleFrom(text string) string {
	line := strings.TrimSpace(text)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	const max = 60
	if utf8.RuneCountInString(line) <= max {
		return line
	}
	r := []rune(line)[:max]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:") + "…"
}
