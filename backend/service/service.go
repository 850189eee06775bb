// Package service is Conch's one front door: every operation the surfaces
// offer, in one place. The Wails window binds *Service as it is; the
// gateway serves the same methods over HTTP. Each method decides once
// (whether a new task is a shell command or a chat's task, how output is
// read, how preferences are checked and applied) and returns the engines'
// errors, whose codes the surfaces map (errcode).
package service

//go:generate go run conch/backend/devcmd/contract/gen

import (
	"context"
	"sync"

	"conch/backend/activity"
	"conch/backend/backup"
	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/doctor"
	"conch/backend/engine"
	"conch/backend/errcode"
	"conch/backend/handoff"
	"conch/backend/host"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider/registry"
	"conch/backend/push"
	"conch/backend/routine"
	"conch/backend/search"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// API is every operation the surfaces offer, one to one with the frontend's
// Backend (frontend/src/lib/backend/backend.ts; its bindings are generated
// from this interface). *Service implements it.
type API interface {
	ListTasks(q TaskQuery) (TaskList, error)
	CreateTask(req taskrun.CreateRequest) (task.Task, error)
	GetTask(id string) (task.Task, error)
	ReadOutput(id string, offset int64, max int) (OutputChunk, error)
	StopTask(id string) (task.Task, error)
	RetryTask(id string) (task.Task, error)
	ResumeTask(id string) (task.Task, error)
	DeleteTask(id string) error
	AnswerTask(id, askID string, allow bool) (task.Task, error)
	RemoveWorktree(id string, confirm bool) (task.Task, error)
	FetchTask(id string) (Fetched, error)
	OpenFolder(id string) error
	OpenTask(id string) error
	Approvals() ([]Approval, error)
	Doctor() (doctor.Report, error)
	Preferences() (pref.Preferences, error)
	SetPreferences(p pref.Preferences) (pref.Preferences, error)
	ListConversations(q ConversationQuery) (ConversationList, error)
	CreateConversation(req chat.CreateRequest) (conversation.Conversation, error)
	GetConversation(id string, before uint64, limit int) (chat.Page, error)
	PatchConversation(id string, req chat.PatchRequest) (conversation.Conversation, error)
	SendMessage(id, text string) (conversation.Message, error)
	StopConversation(id string) (conversation.Conversation, error)
	AnswerAsk(id, askID string, allow bool) (conversation.Conversation, error)
	ListProviders() (ProviderList, error)
	FindProviders() (registry.Found, error)
	GetProvider(id string) (registry.Listing, error)
	PutProvider(id string, cfg registry.PutRequest) (registry.Listing, error)
	DeleteProvider(id string) error
	SaveBackup(withOutput bool) (BackupSaved, error)
	TakeOpen() (string, error)
	About() (About, error)
	Search(q SearchQuery) (search.Results, error)
	Activity(q ActivityQuery) (activity.Page, error)
	PushKey() (PushKey, error)
	SubscribePush(sub push.Subscription) (PushSubscribed, error)
	UnsubscribePush(endpoint string) error
	ListRoutines() (routine.List, error)
	CreateRoutine(req routine.CreateRequest) (routine.Card, error)
	GetRoutine(id string) (routine.Card, error)
	PatchRoutine(id string, req routine.PatchRequest) (routine.Card, error)
	DeleteRoutine(id string) error
	RunRoutine(id string) (task.Task, error)
	ListHosts() (host.List, error)
	GetHost(id string) (store.Host, error)
	PutHost(id string, req host.PutRequest) (store.Host, error)
	DeleteHost(id string) error
	TestHost(id string) (host.TestResult, error)
	AcceptHostKey(id string, req host.AcceptRequest) (store.Host, error)
}

var _ API = (*Service)(nil)

// Prefs is where preferences live (*store.Bolt).
type Prefs interface {
	Preferences() (pref.Preferences, error)
	PutPreferences(p pref.Preferences) error
}

// AtLogin opens Conch when the person logs in (autostart.Login): Enabled
// reads the system's state, Set writes or removes it.
type AtLogin interface {
	Enabled() (bool, error)
	Set(on bool) error
}

// FallbackChecker refuses a limitFallback that could never carry a task on
// (*chattask.Executor).
type FallbackChecker interface {
	CheckFallback(ctx context.Context, id string) error
}

// HostLinks reach the runners on hosts (*hostlink.Links).
type HostLinks interface {
	RemoveWorktree(ctx context.Context, host, id string, confirm bool) (task.Task, error)
	// Check says why host takes no work (nil: it does), naming those that do.
	Check(host string) error
	// Agents are the coding-agent CLIs found on host at its last test.
	Agents(host string) ([]engine.Engine, error)
}

// Config wires a Service. A part left nil (tests serve only what they
// check) answers its operations with not_found.
type Config struct {
	Tasks *taskrun.Runner
	Logs  *output.Logs
	// Chats, Handoff and Providers serve the chat operations; Fallbacks
	// checks a limitFallback before it is saved.
	Chats     *chat.Manager
	Handoff   *handoff.Service
	Providers *registry.Registry
	Fallbacks FallbackChecker
	// Runner makes this a host's runner: a request for a chat task with
	// no chat above it here is a task another Conch sent (Handoff's
	// StartSent).
	Runner bool
	Prefs  Prefs
	// AtLogin is "Open at login" (nil: not available here).
	AtLogin AtLogin
	// Health gathers what the doctor checks besides the tasks.
	Health Health
	// Backup is the home backups are taken of (GET /api/backup,
	// SaveBackup); BackupDir is where SaveBackup puts them ("": the
	// person's Downloads folder).
	Backup    *backup.Source
	BackupDir string
	// Open shows a folder in the file manager (nil: the system's opener).
	Open func(dir string) error
	// Activity is the account of what ran (nil: not available).
	Activity *activity.Log
	// Search is the full-text index (nil: search is not available).
	Search *search.Index
	// PushKeys and PushBook are Web Push's VAPID key and the browsers
	// subscribed (nil: Web Push is not available).
	PushKeys *push.Keys
	PushBook *push.Book
	// Routines keeps the routines (nil: not available).
	Routines *routine.Service
	// Hosts keeps the other computers reached over SSH (nil: not
	// available).
	Hosts *host.Service
	// Links reach the runners on hosts, for what a host's task keeps
	// there (its worktree).
	Links HostLinks
	// Opens is the last task a notification asked to show (TakeOpen).
	Opens *Opens
	// Show brings the window forward on a task's chat, as a click on its
	// notification does (OpenTask); nil where nothing can show one.
	Show func(taskID string)
	// UserHome is the person's home folder (About), where tasks and chats
	// run when given no folder.
	UserHome string
}

// Service holds every operation the surfaces offer. Its exported methods
// are exactly API's: the window binds them all.
type Service struct {
	cfg Config

	mu       sync.Mutex // guards the desktop's features
	tray     func() doctor.Feature
	shortcut doctor.Feature
}

// New returns the service over cfg's engines.
func New(cfg Config) *Service {
	s := &Service{cfg: cfg, tray: func() doctor.Feature { return doctor.Feature{} }}
	if cfg.Health.Served {
		s.tray = func() doctor.Feature {
			return doctor.Feature{Detail: "conch serve has no tray; the desktop app shows one"}
		}
		s.shortcut = doctor.Feature{Detail: "conch serve has no global shortcut; the desktop app has Ctrl+Shift+Enter"}
	}
	return s
}

// SetDesktop records how the window's tray stands (tray is asked at each
// report: a tray host may come after Conch) and how its shortcut came up,
// for the doctor. It is a function, not a method, so the window does not
// bind it.
func SetDesktop(s *Service, tray func() doctor.Feature, shortcut doctor.Feature) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tray, s.shortcut = tray, shortcut
}

// errUnavailable is the answer of an operation whose engine this surface
// does not have.
func errUnavailable(what string) error {
	return errcode.New(errcode.NotFound, what+" are not available here")
}
