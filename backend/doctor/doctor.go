// Package doctor says what is wrong with this Conch and where to fix it:
// tasks that were interrupted or need the person, providers that are not
// ready, the store, notifications, the tray and the global shortcut.
package doctor

import (
	"fmt"
	"runtime"
	"strings"

	"conch/backend/internal/quantity"
	"conch/backend/pref"
	"conch/backend/task"
)

// Level grades a check.
type Level string

const (
	// OK needs nothing.
	OK Level = "ok"
	// Info is worth knowing but nothing is wrong.
	Info Level = "info"
	// Warn works, but not fully; Fix says what to do.
	Warn Level = "warn"
	// Fail is broken; `conch doctor` exits 1.
	Fail Level = "fail"
)

// Check is one line of the report.
type Check struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Level   Level    `json:"level"`
	Summary string   `json:"summary"`
	Details []string `json:"details"`
	Fix     string   `json:"fix,omitempty"`
	// Link is a page of the app that shows more ("/tasks").
	Link string `json:"link,omitempty"`
}

// Report is every check, in a fixed order.
type Report struct {
	Checks []Check `json:"checks" ts:"notnull"`
	// OK is false when any check failed.
	OK bool `json:"ok"`
}

// Provider is what the doctor needs to know of one provider.
type Provider struct {
	ID     string
	Name   string
	Ready  bool
	Reason string
	// Version is a coding-agent CLI's version, shown beside its name.
	Version string
}

// Store describes the database.
type Store struct {
	Path   string
	Schema int
	Size   int64
	// Err is why it could not be opened or read, if so.
	Err error
	// Note is shown when the report was made without opening it.
	Note string
}

// Notifications describes the notification service.
type Notifications struct {
	// Service names what is used ("dunst 1.9 over D-Bus").
	Service string
	// Actions is whether clicks and buttons reach Conch.
	Actions bool
	// Problem is why the preferred service is not used, if so.
	Problem string
	Topics  pref.Topics
	// OS is the system the fix is for, as runtime.GOOS says it ("": this
	// one).
	OS string
}

// notificationFix says how to get notifications with buttons working on
// the system goos: missing says there is no service at all.
func notificationFix(goos string, missing bool) string {
	switch goos {
	case "windows":
		return "Turn on notifications for Conch in Settings → System → Notifications, and turn off Do not disturb."
	case "darwin":
		return "Allow notifications for Conch in System Settings → Notifications."
	}
	if missing {
		return "Install a notification server (dunst, or your desktop's own)."
	}
	return "Start a notification server (dunst, or your desktop's own) for buttons and click-to-open."
}

// Feature is the state of a desktop-only part (tray, shortcut).
type Feature struct {
	// Running is false when this Conch has no such part (conch serve).
	Running bool
	OK      bool
	Detail  string
}

// Input is everything the checks look at.
type Input struct {
	// Tasks are those the tasks check looks at: at least the ones not
	// finished and the interrupted ones.
	Tasks []task.Task
	// TaskCount is how many tasks the store holds in all, finished ones
	// too, when Tasks leaves some out (0: Tasks is all of them).
	TaskCount     int
	Providers     []Provider
	Store         Store
	Notifications Notifications
	Tray          Feature
	Shortcut      Feature
}

// Run makes the report.
func Run(in Input) Report {
	r := Report{Checks: []Check{
		checkTasks(in.Tasks, max(in.TaskCount, len(in.Tasks))),
		checkProviders(in.Providers),
		checkStore(in.Store),
		checkNotifications(in.Notifications),
		checkFeature("tray", "Tray", in.Tray,
			"Conch shows its tray icon with the count of working tasks.",
			"Your desktop has no tray (StatusNotifier) host, so the badge is not shown; Conch runs on without it. On GNOME, install the AppIndicator extension."),
		checkFeature("shortcut", "Global shortcut", in.Shortcut,
			"Ctrl+Shift+Enter brings Conch forward from anywhere.",
			"Another app holds Ctrl+Shift+Enter, or the system refused it; the shortcut still works inside Conch's window."),
	}}
	r.OK = true
	for _, c := range r.Checks {
		if c.Level == Fail {
			r.OK = false
		}
	}
	return r
}

// checkTasks looks at tasks; total is how many the store holds in all.
func checkTasks(tasks []task.Task, total int) Check {
	c := Check{ID: "tasks", Title: "Tasks", Level: OK, Link: "/tasks", Details: []string{}}
	var interrupted, resumable, needsYou, working int
	for _, t := range tasks {
		switch t.Status {
		case task.Interrupted:
			interrupted++
			if t.Resumable() == "" {
				resumable++
				c.Details = append(c.Details, "Interrupted (can resume): "+t.Title)
				continue
			}
			c.Details = append(c.Details, "Interrupted: "+t.Title)
		case task.NeedsYou:
			needsYou++
			c.Details = append(c.Details, "Needs your OK: "+t.Title)
		case task.Running:
			working++
		}
	}
	parts := []string{}
	if working > 0 {
		parts = append(parts, quantity.Plural(working, "task is working", "tasks are working"))
	}
	if needsYou > 0 {
		c.Level = Info
		parts = append(parts, quantity.Plural(needsYou, "task needs your OK", "tasks need your OK"))
	}
	if interrupted > 0 {
		c.Level = Warn
		parts = append(parts, quantity.Plural(interrupted, "task was interrupted when Conch stopped", "tasks were interrupted when Conch stopped"))
		switch {
		case resumable == interrupted:
			c.Fix = "Open Tasks and press Resume to carry them on from where they stopped, or Delete them."
		case resumable > 0:
			c.Fix = "Open Tasks: press Resume on the chat tasks to carry them on from where they stopped, Try again on the commands you still want, or Delete them."
		default:
			c.Fix = "Open Tasks and press Try again on the ones you still want, or Delete them."
		}
	}
	if len(parts) == 0 {
		c.Summary = fmt.Sprintf("Nothing needs you (%s in all).", quantity.Plural(total, "task", "tasks"))
	} else {
		c.Summary = capitalise(strings.Join(parts, "; ")) + "."
	}
	return c
}

// ShellID is the built-in shell's provider id.
const ShellID = "shell"

func checkProviders(ps []Provider) Check {
	c := Check{ID: "providers", Title: "Providers", Level: OK, Details: []string{}}
	ready, talkers := 0, 0
	for _, p := range ps {
		name := p.Name
		if p.Version != "" {
			name += " " + p.Version
		}
		if p.Ready {
			ready++
			if p.ID != ShellID {
				talkers++
			}
			c.Details = append(c.Details, name+": ready")
			continue
		}
		c.Details = append(c.Details, name+": not ready — "+p.Reason)
	}
	switch {
	case len(ps) == 0 || ready == 0:
		c.Level = Fail
		c.Summary = "No provider is ready, so nothing can run."
		c.Fix = "Install bash for shell tasks, or connect a provider."
		c.Link = "/providers"
	case talkers == 0:
		// The first run, most often: commands work, but a chat can only
		// run each message as a command.
		c.Level = Warn
		c.Summary = "Only the shell is ready: a chat runs each message as a command and cannot answer in words."
		c.Fix = "Connect a model (Ollama or LM Studio on this computer, or an API key) or sign in to a coding-agent CLI."
		c.Link = "/providers"
	case ready < len(ps):
		c.Level = Warn
		c.Summary = fmt.Sprintf("%d of %d providers are ready.", ready, len(ps))
		c.Fix = "See why each one is not ready below."
	default:
		c.Summary = quantity.Plural(ready, "provider is ready", "providers are ready") + "."
	}
	return c
}

func checkStore(s Store) Check {
	c := Check{ID: "store", Title: "Store", Level: OK, Details: []string{"Database: " + s.Path}}
	if s.Err != nil {
		c.Level = Fail
		c.Summary = "The database could not be opened: " + s.Err.Error()
		c.Fix = "Check the folder's permissions and free space; if another Conch runs, use that one."
		return c
	}
	c.Summary = fmt.Sprintf("Opens fine: schema version %d, %s.", s.Schema, quantity.Bytes(s.Size))
	if s.Note != "" {
		c.Level = Info
		c.Summary = s.Note
	}
	return c
}

func checkNotifications(n Notifications) Check {
	c := Check{ID: "notifications", Title: "Notifications", Level: OK, Details: []string{
		onOff("When a background task finishes", n.Topics.Tasks),
		onOff("When a task needs your OK", n.Topics.Approvals),
	}}
	goos := n.OS
	if goos == "" {
		goos = runtime.GOOS
	}
	switch {
	case n.Service == "":
		c.Level = Warn
		c.Summary = "No notification service is available."
		c.Fix = notificationFix(goos, true)
	case n.Problem != "":
		c.Level = Warn
		c.Summary = "Using " + n.Service + ": " + n.Problem + "."
		c.Fix = notificationFix(goos, false)
	default:
		c.Summary = "Using " + n.Service + "."
		if !n.Actions {
			c.Summary += " Clicking a notification only dismisses it; answer questions in the app."
		}
	}
	if !n.Topics.Tasks && !n.Topics.Approvals && c.Level == OK {
		c.Level = Info
		c.Summary += " Both topics are off."
	}
	return c
}

func checkFeature(id, title string, f Feature, ok, broken string) Check {
	c := Check{ID: id, Title: title, Level: OK, Details: []string{}}
	switch {
	case !f.Running:
		c.Level = Info
		c.Summary = "Not used here: " + nonEmpty(f.Detail, "only the desktop app has it") + "."
	case f.OK:
		c.Summary = ok
	default:
		c.Level = Warn
		c.Summary = broken
	}
	if f.Running && f.Detail != "" {
		c.Details = append(c.Details, f.Detail)
	}
	return c
}

func onOff(topic string, on bool) string {
	if on {
		return topic + ": on"
	}
	return topic + ": off"
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Text renders the report for a terminal.
func (r Report) Text() string {
	var b strings.Builder
	marks := map[Level]string{OK: "ok  ", Info: "info", Warn: "warn", Fail: "FAIL"}
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%s  %-16s %s\n", marks[c.Level], c.Title, c.Summary)
		for _, d := range c.Details {
			fmt.Fprintf(&b, "      %-16s · %s\n", "", d)
		}
		if c.Fix != "" {
			fmt.Fprintf(&b, "      %-16s → %s\n", "", c.Fix)
		}
	}
	return b.String()
}
