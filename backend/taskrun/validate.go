package taskrun

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"conch/backend/remote"
	"conch/backend/store"
	"conch/backend/task"
)

// Options are the optional settings of a new task.
type Options struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Mode     string `json:"mode,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	// Check is a command run in the task's folder once it has done its
	// work: the task is done only when it exits 0 (SPEC §4.2).
	Check string `json:"check,omitempty"`
	// CheckRetries is how many more turns a chat task's model gets to
	// make a failing check pass (default 1, at most MaxCheckRetries).
	CheckRetries *int `json:"checkRetries,omitempty"`
	// Host is the host (SPEC §6) to run on: its cwd is a folder there,
	// "~" for the home of the user Conch logs in as.
	Host string `json:"host,omitempty"`
	// ID, on a runner only, is the id the desktop gave the task: the same
	// task on both sides (see Config.ClientIDs).
	ID string `json:"id,omitempty"`
	// Tainted and Limit, on a runner only, are what the chat a sent chat
	// task came from stands at: outside content read, and the most (USD)
	// its chat may spend there (0: no limit of its own).
	Tainted bool    `json:"tainted,omitempty"`
	Limit   float64 `json:"limit,omitempty"`
	// Kind and Worktree, on a runner only, are a sent chat task's kind
	// (a delegate's helper, or background) and whether it works in a
	// worktree of its own, made there.
	Kind     task.Kind `json:"kind,omitempty"`
	Worktree bool      `json:"worktree,omitempty"`
	// Lend, on a runner only, is the API-model provider a sent chat task
	// runs on, lent with the person's OK for that host: its record and
	// key, kept there in memory while the task is there and not ended.
	Lend *Lent `json:"lend,omitempty"`
}

// Lent is an API-model provider lent to a host's runner for one task.
type Lent struct {
	Provider store.ProviderConfig `json:"provider"`
	Key      string               `json:"key,omitempty"`
}

// Sent reports whether o holds what only a task sent to a host's runner
// may carry (its id, kind and worktree, its chat's taint and limit).
func (o Options) Sent() bool {
	return o.ID != "" || o.Tainted || o.Limit != 0 || o.Kind != "" || o.Worktree || o.Lend != nil
}

// CreateRequest is what it takes to start a background task.
type CreateRequest struct {
	Text           string  `json:"text"`
	ConversationID string  `json:"conversationId,omitempty"`
	Title          string  `json:"title,omitempty"`
	Options        Options `json:"options,omitempty"`
}

// Bounds on what a task is asked to do; larger work belongs in a file.
const (
	MaxText  = 64 << 10
	MaxTitle = 200
)

// ValidateText refuses a task's text and title that can never run: empty or
// longer than MaxText, a title longer than MaxTitle.
func ValidateText(text, title string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: text is empty: write what the task should do", ErrInvalid)
	}
	if len(text) > MaxText {
		return fmt.Errorf("%w: text is longer than %d KiB", ErrInvalid, MaxText>>10)
	}
	if len(strings.TrimSpace(title)) > MaxTitle {
		return fmt.Errorf("%w: title is longer than %d bytes", ErrInvalid, MaxTitle)
	}
	return nil
}

// Validate is the one gate every new task passes, whoever made it: an id, a
// kind, a mode, text and title within bounds, and a folder that is an
// absolute path to a folder that exists.
func Validate(t task.Task) error {
	if t.ID == "" || !t.Kind.Valid() {
		return fmt.Errorf("%w: a task needs an id and a kind (background or helper)", ErrInvalid)
	}
	if !t.Mode.Valid() {
		return fmt.Errorf("%w: unknown mode %q (plan, ask, edits or auto)", ErrInvalid, t.Mode)
	}
	if err := ValidateText(t.Text, t.Title); err != nil {
		return err
	}
	if err := validateCwd(t); err != nil {
		return err
	}
	if t.Check != "" {
		if err := validateCheck(t.Check); err != nil {
			return err
		}
		if t.Mode == task.Plan {
			return fmt.Errorf("%w: a check runs a command, which plan mode refuses; pick ask, edits or auto, or leave the check out", ErrInvalid)
		}
	}
	return nil
}

// validateCwd checks the task's folder: here, an absolute path to a folder
// that exists; on a host, "~", "~/…" or an absolute path, which the host's
// runner checks there.
func validateCwd(t task.Task) error {
	if t.Host != "" {
		if !remote.HostFolder(t.Cwd) {
			return fmt.Errorf("%w: folder %q on %s is neither ~, ~/… nor an absolute path", ErrInvalid, t.Cwd, t.Host)
		}
		return nil
	}
	if !filepath.IsAbs(t.Cwd) {
		return fmt.Errorf("%w: folder %q is not an absolute path", ErrInvalid, t.Cwd)
	}
	if fi, err := os.Stat(t.Cwd); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: folder %s does not exist", ErrInvalid, t.Cwd)
	}
	return nil
}

// MaxCheck bounds a check command; MaxCheckRetries the extra turns.
const (
	MaxCheck        = 4 << 10
	MaxCheckRetries = 5
)

// ValidateRetries validates a check command and its retries as a request
// gives them, and returns the retries to keep (1 when none are given).
func ValidateRetries(check string, retries *int) (int, error) {
	if strings.TrimSpace(check) == "" {
		if retries != nil {
			return 0, fmt.Errorf("%w: checkRetries needs a check command", ErrInvalid)
		}
		return 0, nil
	}
	if err := validateCheck(check); err != nil {
		return 0, err
	}
	if retries == nil {
		return 1, nil
	}
	if *retries < 0 || *retries > MaxCheckRetries {
		return 0, fmt.Errorf("%w: checkRetries must be 0 to %d", ErrInvalid, MaxCheckRetries)
	}
	return *retries, nil
}

func validateCheck(check string) error {
	switch {
	case len(check) > MaxCheck:
		return fmt.Errorf("%w: the check command is longer than %d KiB", ErrInvalid, MaxCheck>>10)
	case strings.ContainsRune(check, 0):
		return fmt.Errorf("%w: the check command holds a NUL byte", ErrInvalid)
	}
	return nil
}

func (r *Runner) newTask(req CreateRequest) (task.Task, error) {
	o := req.Options
	if o.Provider == "" {
		o.Provider = "shell"
	}
	if _, ok := r.cfg.Executors[o.Provider]; !ok {
		return task.Task{}, fmt.Errorf("%w: unknown provider %q (known: %s)", ErrInvalid, o.Provider, strings.Join(r.providerNames(), ", "))
	}
	mode := task.Mode(o.Mode)
	if o.Mode == "" {
		mode = task.Ask
	}
	retries, err := ValidateRetries(o.Check, o.CheckRetries)
	if err != nil {
		return task.Task{}, err
	}
	cwd := o.Cwd
	switch {
	case o.Host != "":
		if err := r.onHost(o); err != nil {
			return task.Task{}, err
		}
		if cwd == "" {
			cwd = "~"
		}
	case cwd == "":
		cwd = r.cfg.Home
	}
	if filepath.IsAbs(cwd) {
		cwd = filepath.Clean(cwd)
	}
	id := store.NewID()
	if o.Tainted || o.Limit != 0 || o.Kind != "" || o.Worktree || o.Lend != nil {
		return task.Task{}, fmt.Errorf("%w: tainted, limit, kind, worktree and lend are a chat task's, sent to a host", ErrInvalid)
	}
	if o.ID != "" {
		if !r.cfg.ClientIDs || !validID(o.ID) {
			return task.Task{}, fmt.Errorf("%w: a task's id is Conch's to give (here, the id field is not taken)", ErrInvalid)
		}
		id = o.ID
	}
	title := strings.TrimSpace(req.Title)
	if title == "" {
		title = task.TitleFrom(req.Text)
	}
	t := task.Task{
		ID:                   id,
		Kind:                 task.Background,
		Status:               task.Queued,
		Title:                title,
		Text:                 req.Text,
		ParentConversationID: req.ConversationID,
		Provider:             o.Provider,
		Model:                o.Model,
		Mode:                 mode,
		Cwd:                  cwd,
		Host:                 o.Host,
		Check:                strings.TrimSpace(o.Check),
		CheckRetries:         retries,
		Steps:                []string{},
		Wake:                 task.WakeNone,
		CreatedAt:            r.cfg.Now().UTC(),
	}
	return t, Validate(t)
}

func (r *Runner) providerNames() []string {
	var names []string
	for n := range r.cfg.Executors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
