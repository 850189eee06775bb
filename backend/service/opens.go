package service

import (
	"sync"
	"time"
)

// OpenFresh is how long a notification's request to show a task waits for
// a page that was not listening yet.
const OpenFresh = 30 * time.Second

// Opens keeps the last task a notification asked to show, for a page that
// was not listening when it asked: a click on a toast that starts a closed
// Conch comes before the window's page has loaded. The zero value is ready.
type Opens struct {
	mu sync.Mutex
	id string
	at time.Time
	// Now overrides time.Now (tests).
	Now func() time.Time
}

func (o *Opens) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Note records that a notification asked to show task id.
func (o *Opens) Note(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.id, o.at = id, o.now()
}

// Take returns the task noted in the last OpenFresh, once; "" when none.
func (o *Opens) Take() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	id := o.id
	o.id = ""
	if id == "" || o.now().Sub(o.at) >= OpenFresh {
		return ""
	}
	return id
}

// TakeOpen returns the task a notification asked to show in the last 30
// seconds, once, so a page that has just started shows it though the
// request came before it listened. "" when none.
func (s *Service) TakeOpen() (string, error) {
	if s.cfg.Opens == nil {
		return "", nil
	}
	return s.cfg.Opens.Take(), nil
}

// OpenTask shows a task the way a click on its notification does: the
// window comes forward on the chat it came from, and every page open on
// Conch follows (the app.open event). `conch open ID` asks for it.
func (s *Service) OpenTask(id string) error {
	if _, err := s.GetTask(id); err != nil {
		return err
	}
	if s.cfg.Show == nil {
		return errUnavailable("Windows")
	}
	s.cfg.Show(id)
	return nil
}
