//go:build windows

package shortcut

import (
	"fmt"
	"sync"
	"time"

	"golang.design/x/hotkey"
)

// Shortcut is a registered global shortcut; Close releases it.
type Shortcut struct {
	hk   *hotkey.Hotkey
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Listen registers Ctrl+Shift+Enter with Windows (RegisterHotKey) and calls
// onPress on each key press (debounced) until Close.
func Listen(onPress func()) (*Shortcut, error) {
	hk := hotkey.New([]hotkey.Modifier{hotkey.ModCtrl, hotkey.ModShift}, hotkey.KeyReturn)
	if err := hk.Register(); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrTaken, err)
	}
	s := &Shortcut{hk: hk, done: make(chan struct{})}
	d := &debouncer{f: onPress}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			case <-hk.Keydown():
				d.press(time.Now())
			}
		}
	}()
	return s, nil
}

// Close releases the shortcut; safe twice.
func (s *Shortcut) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.wg.Wait()
		_ = s.hk.Unregister()
	})
	return nil
}
