package notify

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"

	"conch/backend/internal/sessionbus"
	"conch/backend/version"
)

const (
	dbusName  = "org.freedesktop.Notifications"
	dbusPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	dbusIface = "org.freedesktop.Notifications"
)

// DBus sends notifications through org.freedesktop.Notifications and turns
// its ActionInvoked signals into calls of the ActionFunc set with Handle.
type DBus struct {
	conn    *dbus.Conn
	ownConn bool
	obj     dbus.BusObject
	clicks  clicks
	server  string
	markup  bool // the server reads the body as markup ("body-markup")

	mu     sync.Mutex
	ids    map[string]uint32 // tag → the server's id, for replaces_id
	tags   map[uint32]string
	asking map[string]bool // tags whose notification shown is a question

	signals chan *dbus.Signal
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// ConnectSession connects to the session bus and the notification server on
// it, or returns an error wrapping ErrNoServer.
func ConnectSession() (*DBus, error) {
	conn, err := sessionbus.Connect()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
	}
	d, err := NewDBus(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	d.ownConn = true
	return d, nil
}

// NewDBus uses conn (which stays the caller's) to reach the notification
// server and listen for its actions, which are kept until Handle.
func NewDBus(conn *dbus.Conn) (*DBus, error) {
	obj := conn.Object(dbusName, dbusPath)
	var name, vendor, version, spec string
	if err := obj.Call(dbusIface+".GetServerInformation", 0).Store(&name, &vendor, &version, &spec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
	}
	var caps []string
	// A server that cannot say what it does is taken to read plain text.
	_ = obj.Call(dbusIface+".GetCapabilities", 0).Store(&caps)
	d := &DBus{
		conn: conn, obj: obj,
		server:  fmt.Sprintf("%s %s over D-Bus", name, version),
		markup:  slices.Contains(caps, "body-markup"),
		ids:     map[string]uint32{},
		tags:    map[uint32]string{},
		asking:  map[string]bool{},
		signals: make(chan *dbus.Signal, 32),
		done:    make(chan struct{}),
	}
	if err := conn.AddMatchSignal(dbus.WithMatchObjectPath(dbusPath), dbus.WithMatchInterface(dbusIface)); err != nil {
		return nil, fmt.Errorf("listen for notification actions: %w", err)
	}
	conn.Signal(d.signals)
	d.wg.Add(1)
	go d.listen()
	return d, nil
}

// Describe names the server, e.g. "dunst 1.9.0 over D-Bus".
func (d *DBus) Describe() string { return d.server }

// Actions is true: D-Bus servers send clicks and buttons back.
func (d *DBus) Actions() bool { return true }

// Handle sets what clicks and buttons call, handing it those kept so far.
func (d *DBus) Handle(f ActionFunc) { d.clicks.handle(f) }

// Waiting is how many clicks wait for Handle, for tests.
func (d *DBus) Waiting() int { return d.clicks.waiting() }

// Expiry and urgency of a notification, as the specification numbers them.
const (
	// expireDefault leaves it to the server (most take a few seconds).
	expireDefault int32 = -1
	// expireNever keeps it up until it is dismissed or replaced.
	expireNever int32 = 0
	// urgencyCritical is the level the specification says servers keep on
	// screen until the person acts on it.
	urgencyCritical byte = 2
)

// markupEscaper writes plain text as the notification specification's
// body markup, which is a small subset of XML.
var markupEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Send shows m, replacing the notification already shown for its tag.
func (d *DBus) Send(m Message) error {
	d.mu.Lock()
	replaces := d.ids[m.Tag]
	d.mu.Unlock()
	actions := []string{ActionOpen, label(ActionOpen)}
	for _, a := range m.Actions {
		actions = append(actions, a, label(a))
	}
	hints := map[string]dbus.Variant{
		"x-dunst-stack-tag":               dbus.MakeVariant(m.Tag),
		"x-canonical-private-synchronous": dbus.MakeVariant(m.Tag),
		"desktop-entry":                   dbus.MakeVariant(version.AppID), // the desktop entry, for its name and icon
	}
	// A question waits for its answer for as long as the task does (an
	// hour and more), so its notification must not time out after the
	// server's few seconds: it stays until answered or replaced. A finish
	// is news, and may go like any other.
	question := len(m.Actions) > 0
	expire := expireDefault
	if question {
		expire = expireNever
		hints["urgency"] = dbus.MakeVariant(urgencyCritical)
	}
	body := m.Body
	if d.markup {
		// Such a server (xfce4-notifyd, GNOME Shell, dunst) would take
		// `make && make test` or `<file>` as broken markup.
		body = markupEscaper.Replace(body)
	}
	var id uint32
	err := d.obj.Call(dbusIface+".Notify", 0,
		"Conch", replaces, "", m.Title, body, actions, hints, expire).Store(&id)
	if err != nil {
		return fmt.Errorf("notify %s: %w", m.Tag, err)
	}
	d.mu.Lock()
	if replaces != 0 && replaces != id {
		delete(d.tags, replaces)
	}
	d.ids[m.Tag] = id
	d.tags[id] = m.Tag
	d.asking[m.Tag] = question
	d.mu.Unlock()
	return nil
}

// Withdraw takes down the notification shown for tag, if any.
func (d *DBus) Withdraw(tag string) error {
	d.mu.Lock()
	id, ok := d.ids[tag]
	d.forget(tag, id)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	if err := d.obj.Call(dbusIface+".CloseNotification", 0, id).Err; err != nil {
		return fmt.Errorf("withdraw %s: %w", tag, err)
	}
	return nil
}

// forget drops what is known of tag's notification id; d.mu is held.
func (d *DBus) forget(tag string, id uint32) {
	delete(d.tags, id)
	if d.ids[tag] == id {
		delete(d.ids, tag)
		delete(d.asking, tag)
	}
}

// ID returns the server's id for tag (0 if none), for tests and logs.
func (d *DBus) ID(tag string) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ids[tag]
}

func (d *DBus) listen() {
	defer d.wg.Done()
	for {
		select {
		case <-d.done:
			return
		case sig, ok := <-d.signals:
			if !ok {
				return
			}
			d.handle(sig)
		}
	}
}

func (d *DBus) handle(sig *dbus.Signal) {
	switch sig.Name {
	case dbusIface + ".ActionInvoked":
		if len(sig.Body) != 2 {
			return
		}
		id, ok1 := sig.Body[0].(uint32)
		action, ok2 := sig.Body[1].(string)
		if !ok1 || !ok2 {
			return
		}
		d.mu.Lock()
		tag, ok := d.tags[id]
		d.mu.Unlock()
		if ok {
			d.clicks.deliver(tag, action)
		}
	case dbusIface + ".NotificationClosed":
		if len(sig.Body) < 1 {
			return
		}
		id, ok := sig.Body[0].(uint32)
		if !ok {
			return
		}
		// A closed notification cannot be replaced; the next message for
		// its tag starts a new one.
		d.mu.Lock()
		if tag, ok := d.tags[id]; ok {
			d.forget(tag, id)
		}
		d.mu.Unlock()
	}
}

// Close takes down the questions still shown, whose buttons nothing would
// answer any more (they never time out, and the tasks that asked them are
// interrupted as Conch stops), then stops listening (and closes the
// connection if it opened it).
func (d *DBus) Close() error {
	d.once.Do(func() {
		d.mu.Lock()
		var questions []string
		for tag, asking := range d.asking {
			if asking {
				questions = append(questions, tag)
			}
		}
		d.mu.Unlock()
		for _, tag := range questions {
			_ = d.Withdraw(tag)
		}
		d.conn.RemoveSignal(d.signals)
		_ = d.conn.RemoveMatchSignal(dbus.WithMatchObjectPath(dbusPath), dbus.WithMatchInterface(dbusIface))
		close(d.done)
		d.wg.Wait()
		if d.ownConn {
			_ = d.conn.Close()
		}
	})
	return nil
}
