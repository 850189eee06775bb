package service

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"conch/backend/doctor"
	"conch/backend/notify"
	"conch/backend/pref"
	"conch/backend/provider/registry"
	"conch/backend/store"
	"conch/backend/task"
)

// Health is what the doctor checks besides the tasks and the providers.
type Health struct {
	// StorePath is the database file.
	StorePath string
	// Shell says whether the shell provider can run commands.
	Shell func() (bool, string)
	// Notifier is the notification service in use (nil: none).
	Notifier notify.Notifier
	// NotifyProblem is why the preferred notification service is not used.
	NotifyProblem string
	// ProvidersProblem is why a connected provider could not be read.
	ProvidersProblem string
	// Served is true for `conch serve`, which has no tray and no global
	// shortcut; the window tells how its came up with SetDesktop.
	Served bool
}

// doctorTimeout bounds the providers' probes behind a doctor report.
const doctorTimeout = 5 * time.Second

// Doctor says what is wrong and where to fix it.
func (s *Service) Doctor() (doctor.Report, error) {
	h := s.cfg.Health
	tasks, total := s.doctorTasks()
	st := doctor.Store{Path: h.StorePath, Schema: store.SchemaVersion}
	if fi, err := os.Stat(h.StorePath); err == nil {
		st.Size = fi.Size()
	} else {
		st.Err = err
	}
	topics := pref.Defaults().Notifications
	if s.cfg.Prefs != nil {
		if p, err := s.cfg.Prefs.Preferences(); err == nil {
			topics = p.Notifications
		}
	}
	n := doctor.Notifications{Problem: h.NotifyProblem, Topics: topics}
	if h.Notifier != nil {
		n.Service, n.Actions = h.Notifier.Describe(), h.Notifier.Actions()
	}
	s.mu.Lock()
	trayNow, shortcut := s.tray, s.shortcut
	s.mu.Unlock()
	tray := trayNow()
	return doctor.Run(doctor.Input{
		Tasks:         tasks,
		TaskCount:     total,
		Providers:     doctorProviders(h.Shell, s.cfg.Providers, h.ProvidersProblem),
		Store:         st,
		Notifications: n,
		Tray:          tray,
		Shortcut:      shortcut,
	}), nil
}

// doctorTasks are what the doctor's tasks check looks at: the tasks that
// are not finished and the interrupted ones, without the rest; and how
// many tasks the store holds in all, which its summary counts.
func (s *Service) doctorTasks() (tasks []task.Task, total int) {
	r, err := s.tasks()
	if err != nil {
		return nil, 0
	}
	if counts, err := r.Counts(); err == nil {
		for _, n := range counts {
			total += n
		}
	}
	tasks, _ = r.Active()
	f := store.TaskFilter{Statuses: []task.Status{task.Interrupted}}
	for cursor := ""; ; {
		p, err := r.Page(store.GroupFinished, f, cursor, MaxPage)
		if err != nil {
			break
		}
		tasks = append(tasks, p.Tasks...)
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	return tasks, total
}

// OfflineDoctor checks home without starting anything, for `conch doctor`
// when no Conch runs: no task runs, and tasks left running count as
// interrupted, as the next start will mark them.
func OfflineDoctor(home string, shell func() (bool, string)) doctor.Report {
	path := filepath.Join(home, "conch.db")
	in := doctor.Input{
		Store:    doctor.Store{Path: path, Schema: store.SchemaVersion},
		Tray:     doctor.Feature{Detail: "Conch is not running"},
		Shortcut: doctor.Feature{Detail: "Conch is not running"},
	}
	topics := pref.Defaults().Notifications
	var providers *registry.Registry
	var problem string
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		in.Store.Note = "No database yet: it is made at the first start."
	} else if st, err := store.Open(path); err != nil {
		in.Store.Err = err
	} else {
		tasks, err := st.Tasks()
		if err != nil {
			in.Store.Err = err
		}
		for i, t := range tasks {
			if t.Status.Active() {
				tasks[i].Status = task.Interrupted
			}
		}
		in.Tasks = tasks
		if p, err := st.Preferences(); err == nil {
			topics = p.Notifications
		}
		if fi, err := os.Stat(path); err == nil {
			in.Store.Size = fi.Size()
		}
		if providers, err = registry.New(context.Background(), registry.Config{Store: st}); err != nil {
			problem = err.Error()
		}
		in.Providers = doctorProviders(shell, providers, problem)
		_ = st.Close()
	}
	if in.Providers == nil {
		in.Providers = doctorProviders(shell, nil, problem)
	}
	n, err := notify.Open(false)
	in.Notifications = doctor.Notifications{Service: n.Describe(), Actions: n.Actions(), Topics: topics}
	if err != nil {
		in.Notifications.Problem = err.Error()
	}
	_ = n.Close()
	return doctor.Run(in)
}

// doctorProviders lists the shell and every provider of reg (which may be
// nil) for the doctor's providers check, each with its reason, the shell
// first, as GET /api/providers lists them (the registry holds the shell
// too; shell says how it stands when there is no registry); problem is
// why a configured provider could not be read, if so.
func doctorProviders(shell func() (bool, string), reg *registry.Registry, problem string) []doctor.Provider {
	var ps []doctor.Provider
	if reg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), doctorTimeout)
		defer cancel()
		for _, l := range reg.List(ctx) {
			p := doctor.Provider{ID: l.ID, Name: l.Name, Ready: l.Ready, Reason: l.Reason, Version: l.Version}
			if l.ID == doctor.ShellID {
				ps = append([]doctor.Provider{p}, ps...)
			} else {
				ps = append(ps, p)
			}
		}
	}
	if len(ps) == 0 || ps[0].ID != doctor.ShellID {
		ready, reason := true, ""
		if shell != nil {
			ready, reason = shell()
		}
		ps = append([]doctor.Provider{{ID: doctor.ShellID, Name: "Shell", Ready: ready, Reason: reason}}, ps...)
	}
	if problem != "" {
		ps = append(ps[:1:1], append([]doctor.Provider{{ID: "configured", Name: "Connected providers", Reason: problem}}, ps[1:]...)...)
	}
	return ps
}
