package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"conch/backend/doctor"
	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/provider/registry"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// TestDoctorProviders: the doctor's providers check lists the shell and
// every provider of the registry, each with its reason, the shell once.
func TestDoctorProviders(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"data":[{"id":"qwen3:8b"}]}`))
	}))
	defer ollama.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	reg, err := registry.New(context.Background(), registry.Config{
		Store: st, Keyring: noKeyring{}, Getenv: func(string) string { return "" },
		LookPath:  func(string) (string, error) { return "", errors.New("not on PATH") },
		OllamaURL: ollama.URL + "/v1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Put(context.Background(), "away", registry.PutRequest{Kind: "openai", Name: "Away", BaseURL: gone.URL + "/v1"}); err != nil {
		t.Fatal(err)
	}
	ps := doctorProviders(func() (bool, string) { return true, "" }, reg, "")
	if len(ps) != 3 || ps[0].ID != "shell" || ps[1].ID != "away" || ps[2].ID != "ollama" {
		t.Fatalf("providers = %+v", ps)
	}
	if ps[1].Ready || ps[1].Reason == "" || !ps[2].Ready {
		t.Errorf("providers = %+v, want away not ready with a reason and ollama ready", ps)
	}
	// The shell is the registry's, listed once, as GET /api/providers lists
	// it: here the registry finds no bash on its PATH.
	if ps[0].Ready || ps[0].Reason != "bash was not found on PATH" {
		t.Errorf("shell = %+v, want the registry's", ps[0])
	}
	if ps := doctorProviders(func() (bool, string) { return false, "bash was not found" }, nil, "a record is corrupt"); len(ps) != 2 || ps[0].Ready || ps[1].Reason != "a record is corrupt" {
		t.Errorf("without a registry: %+v", ps)
	}
}

type noKeyring struct{}

func (noKeyring) Get(string) (string, error) { return "", errors.New("no keyring") }
func (noKeyring) Set(string, string) error   { return errors.New("no keyring") }
func (noKeyring) Delete(string) error        { return errors.New("no keyring") }

// The doctor's tasks check counts every task the store holds when it says
// how many there are in all, the finished ones too, though it looks only
// at those not finished and the interrupted ones.
func TestDoctorCountsTheFinishedTasks(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i, status := range []task.Status{task.Done, task.Done, task.Failed, task.Done, task.Done, task.Failed, task.Done} {
		id := fmt.Sprintf("t%d", i)
		if err := st.PutTask(task.Task{ID: id, Title: id, Kind: task.Background, Status: status, Steps: []string{}}); err != nil {
			t.Fatal(err)
		}
	}
	r := taskrun.New(taskrun.Config{Store: st, Bus: event.NewBus(), Logs: output.New(filepath.Join(home, "tasks")), Home: home})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { r.Stop(); _ = st.Close() }()
	s := New(Config{Tasks: r, Health: Health{StorePath: filepath.Join(home, "conch.db")}})
	report, err := s.Doctor()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range report.Checks {
		if c.ID == "tasks" {
			if want := "Nothing needs you (7 tasks in all)."; c.Summary != want {
				t.Fatalf("tasks check says %q, want %q", c.Summary, want)
			}
			return
		}
	}
	t.Fatal("no tasks check")
}

// The tray check asks how the tray stands at each report: a tray host
// that came after Conch (as at login) is seen.
func TestDoctorAsksTheTrayEachTime(t *testing.T) {
	s := New(Config{})
	present := false
	SetDesktop(s, func() doctor.Feature {
		if present {
			return doctor.Feature{Running: true, OK: true, Detail: "a tray host is present"}
		}
		return doctor.Feature{Running: true, Detail: "no tray host"}
	}, doctor.Feature{Running: true, OK: true})
	level := func() doctor.Level {
		t.Helper()
		r, err := s.Doctor()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if c.ID == "tray" {
				return c.Level
			}
		}
		t.Fatal("no tray check")
		return ""
	}
	if got := level(); got != doctor.Warn {
		t.Fatalf("no host: tray check %s, want warn", got)
	}
	present = true
	if got := level(); got != doctor.OK {
		t.Fatalf("the host came: tray check %s, want ok", got)
	}
}
