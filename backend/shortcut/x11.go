//go:build linux

package shortcut

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// xkReturn is the keysym of the Return key.
const xkReturn = 0xff0d

// Shortcut is a registered global shortcut; Close releases it.
type Shortcut struct {
	conn *xgb.Conn
	done chan struct{}
	once sync.Once
}

// Listen grabs Ctrl+Shift+Enter on the X display ($DISPLAY) and calls
// onPress on each key press (debounced) until Close.
func Listen(onPress func()) (*Shortcut, error) {
	if os.Getenv("DISPLAY") == "" {
		return nil, fmt.Errorf("%w: no X display (on Wayland, Conch listens only through XWayland)", ErrUnsupported)
	}
	xgb.Logger = log.New(io.Discard, "", 0) // it logs routine fallbacks to stderr
	conn, err := xgb.NewConn()
	if err != nil {
		return nil, fmt.Errorf("connect to the X display: %w", err)
	}
	setup := xproto.Setup(conn)
	root := setup.DefaultScreen(conn).Root
	code, err := keycode(conn, setup, xkReturn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	base := uint16(xproto.ModMaskControl | xproto.ModMaskShift)
	// Grab with and without Caps Lock and Num Lock, so they do not hide the
	// shortcut.
	for _, extra := range []uint16{0, xproto.ModMaskLock, xproto.ModMask2, xproto.ModMaskLock | xproto.ModMask2} {
		err := xproto.GrabKeyChecked(conn, true, root, base|extra, code, xproto.GrabModeAsync, xproto.GrabModeAsync).Check()
		if err != nil {
			conn.Close()
			var access xproto.AccessError
			if errors.As(err, &access) {
				return nil, ErrTaken
			}
			return nil, fmt.Errorf("grab %s: %w", Name, err)
		}
	}
	s := &Shortcut{conn: conn, done: make(chan struct{})}
	d := &debouncer{f: onPress}
	go s.loop(d)
	return s, nil
}

// keycode finds the key that types keysym on this keyboard.
func keycode(conn *xgb.Conn, setup *xproto.SetupInfo, keysym xproto.Keysym) (xproto.Keycode, error) {
	first, last := setup.MinKeycode, setup.MaxKeycode
	m, err := xproto.GetKeyboardMapping(conn, first, byte(last-first+1)).Reply()
	if err != nil {
		return 0, fmt.Errorf("read the keyboard map: %w", err)
	}
	per := int(m.KeysymsPerKeycode)
	for i := 0; i*per < len(m.Keysyms); i++ {
		for j := 0; j < per; j++ {
			if m.Keysyms[i*per+j] == keysym {
				return first + xproto.Keycode(i), nil
			}
		}
	}
	return 0, errors.New("this keyboard has no Return key")
}

// loop reads key presses until the connection closes.
func (s *Shortcut) loop(d *debouncer) {
	defer close(s.done)
	for {
		ev, err := s.conn.WaitForEvent()
		if ev == nil && err == nil {
			return // the connection was closed
		}
		if _, ok := ev.(xproto.KeyPressEvent); ok {
			d.press(time.Now())
		}
	}
}

// Close releases the grab and stops listening; safe twice.
func (s *Shortcut) Close() error {
	s.once.Do(func() {
		s.conn.Close()
		<-s.done
	})
	return nil
}
