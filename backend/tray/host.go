package tray

import (
	"fmt"
	"sync"

	"github.com/godbus/dbus/v5"

	"conch/backend/internal/sessionbus"
)

// watcherName is the bus name of the tray host's StatusNotifierWatcher: a
// panel with a tray (Xfce's, KDE's, GNOME's AppIndicator extension) owns it.
const watcherName = "org.kde.StatusNotifierWatcher"

// Host follows whether a tray host runs on the session bus. At login Conch
// may start before the panel; the icon shows once the panel comes (systray
// registers with it then), and so must the doctor's check: it asks the bus
// each time (State), and the bus's NameOwnerChanged tells when a host came
// or went meanwhile (Changed).
type Host struct {
	conn    *dbus.Conn
	ownConn bool
	signals chan *dbus.Signal

	mu      sync.Mutex
	present bool
	changed chan struct{} // closed at the next change, then replaced

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// WatchSessionHost follows the tray host on the session bus, on a
// connection of its own.
func WatchSessionHost() (*Host, error) {
	conn, err := sessionbus.Connect()
	if err != nil {
		return nil, err
	}
	h, err := WatchHost(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	h.ownConn = true
	return h, nil
}

// WatchHost follows the tray host on conn's bus (conn stays the caller's).
func WatchHost(conn *dbus.Conn) (*Host, error) {
	h := &Host{conn: conn, signals: make(chan *dbus.Signal, 8), changed: make(chan struct{}), done: make(chan struct{})}
	// Listen first, then ask: a host that comes between the two is heard.
	if err := conn.AddMatchSignal(h.match()...); err != nil {
		return nil, fmt.Errorf("follow the tray host: %w", err)
	}
	conn.Signal(h.signals)
	h.State()
	h.wg.Add(1)
	go h.listen()
	return h, nil
}

func (h *Host) match() []dbus.MatchOption {
	return []dbus.MatchOption{
		dbus.WithMatchSender("org.freedesktop.DBus"),
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, watcherName),
	}
}

// State asks the bus whether a tray host is there now, for the doctor,
// and says so in words.
func (h *Host) State() (bool, string) {
	var owner string
	err := h.conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, watcherName).Store(&owner)
	h.set(err == nil && owner != "")
	return describe(err == nil && owner != "")
}

// Present is whether a tray host was there when the bus last said, without
// asking it.
func (h *Host) Present() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.present
}

// Changed is closed when a tray host comes or goes after this call.
func (h *Host) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

func describe(present bool) (bool, string) {
	if present {
		return true, "a tray host is present"
	}
	return false, "no tray host (StatusNotifierWatcher) on the session bus"
}

func (h *Host) set(present bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if present != h.present {
		h.present = present
		close(h.changed)
		h.changed = make(chan struct{})
	}
}

func (h *Host) listen() {
	defer h.wg.Done()
	for {
		select {
		case <-h.done:
			return
		case sig, ok := <-h.signals:
			if !ok {
				return
			}
			// NameOwnerChanged(name, old owner, new owner): a new owner
			// means a host is there.
			if len(sig.Body) == 3 && sig.Body[0] == watcherName {
				if owner, ok := sig.Body[2].(string); ok {
					h.set(owner != "")
				}
			}
		}
	}
}

// Close stops following (and closes the connection if it opened it); safe
// twice.
func (h *Host) Close() {
	h.once.Do(func() {
		h.conn.RemoveSignal(h.signals)
		_ = h.conn.RemoveMatchSignal(h.match()...)
		close(h.done)
		h.wg.Wait()
		if h.ownConn {
			_ = h.conn.Close()
		}
	})
}
