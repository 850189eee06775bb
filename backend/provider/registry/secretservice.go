package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/zalando/go-keyring"

	"conch/backend/internal/sessionbus"
)

// SecretTimeout bounds each SecretService operation, connecting included.
// It is below probeTimeout, so the probe's own wait never outlasts it.
const SecretTimeout = 1500 * time.Millisecond

// The Secret Service's D-Bus names (freedesktop.org Secret Service API).
const (
	ssName       = "org.freedesktop.secrets"
	ssPath       = dbus.ObjectPath("/org/freedesktop/secrets")
	ssService    = "org.freedesktop.Secret.Service"
	ssCollection = "org.freedesktop.Secret.Collection"
	ssItem       = "org.freedesktop.Secret.Item"
	ssLogin      = dbus.ObjectPath("/org/freedesktop/secrets/collection/login")
	noPrompt     = dbus.ObjectPath("/")
)

// SecretService is the keyring of a Linux (or BSD) desktop: the Secret
// Service (GNOME Keyring, KWallet) on the D-Bus session bus. Keys are items
// of the login collection, else the default one, with the attributes
// go-keyring gives them (service KeyringService, username the provider
// id), so keys Conch kept through go-keyring are found. Each operation has
// a connection of its own, closed when it ends, and takes at most Timeout.
type SecretService struct {
	// Address is the session bus; empty is the session's own
	// (sessionbus.Address). Without one it fails at once rather than have
	// D-Bus autolaunch a bus, a daemon left running that holds no keyring.
	Address string
	// Timeout bounds each operation; zero is SecretTimeout.
	Timeout time.Duration
}

// ssSecret is the Secret Service's Secret struct, (oayays).
type ssSecret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// ssConn is one operation's connection and the collection it works in.
type ssConn struct {
	ctx        context.Context
	conn       *dbus.Conn
	collection dbus.ObjectPath
}

// open connects, finds the collection and refuses a locked one.
func (s SecretService) open() (*ssConn, func(), error) {
	addr := s.Address
	if addr == "" {
		a, ok := sessionbus.Address()
		if !ok {
			return nil, nil, sessionbus.ErrNone
		}
		addr = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.Timeout, SecretTimeout))
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, nil, bounded(ctx, fmt.Errorf("connect to the session bus: %w", err))
	}
	c := &ssConn{ctx: ctx, conn: conn}
	done := func() { _ = conn.Close(); cancel() }
	if c.collection, err = c.findCollection(); err != nil {
		done()
		return nil, nil, bounded(ctx, err)
	}
	locked, err := c.property(c.collection, ssCollection+".Locked")
	if err != nil {
		done()
		return nil, nil, bounded(ctx, err)
	}
	if b, _ := locked.Value().(bool); b {
		done()
		return nil, nil, ErrLocked
	}
	return c, done, nil
}

// bounded names the timeout when ctx ran out: godbus then only says its
// connection closed.
func bounded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the Secret Service did not answer in time: %w", err)
	}
	return err
}

// findCollection is the login collection when there is one (where
// go-keyring files keys), else the one the default alias names.
func (c *ssConn) findCollection() (dbus.ObjectPath, error) {
	v, err := c.property(ssPath, ssService+".Collections")
	if err != nil {
		return "", fmt.Errorf("ask the Secret Service for its collections: %w", err)
	}
	paths, _ := v.Value().([]dbus.ObjectPath)
	for _, p := range paths {
		if p == ssLogin {
			return p, nil
		}
	}
	var p dbus.ObjectPath
	if err := c.call(ssPath, ssService+".ReadAlias", "default").Store(&p); err != nil {
		return "", fmt.Errorf("ask the Secret Service for its default collection: %w", err)
	}
	if p == noPrompt || p == "" {
		return "", errors.New("the Secret Service has no login or default collection")
	}
	return p, nil
}

func (c *ssConn) call(path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	return c.conn.Object(ssName, path).CallWithContext(c.ctx, method, 0, args...)
}

func (c *ssConn) property(path dbus.ObjectPath, name string) (dbus.Variant, error) {
	dot := strings.LastIndexByte(name, '.')
	iface, prop := name[:dot], name[dot+1:]
	var v dbus.Variant
	err := c.call(path, "org.freedesktop.DBus.Properties.Get", iface, prop).Store(&v)
	return v, err
}

// attributes are an item's lookup attributes, as go-keyring sets them.
func attributes(id string) map[string]string {
	return map[string]string{"service": KeyringService, "username": id}
}

func (c *ssConn) search(id string) ([]dbus.ObjectPath, error) {
	var items []dbus.ObjectPath
	if err := c.call(c.collection, ssCollection+".SearchItems", attributes(id)).Store(&items); err != nil {
		return nil, fmt.Errorf("search the keyring: %w", err)
	}
	return items, nil
}

// session opens a plain session (the secret crosses the session bus only,
// as with every Secret Service client that does not encrypt) and returns
// it with its closer.
func (c *ssConn) session() (dbus.ObjectPath, func(), error) {
	var out dbus.Variant
	var path dbus.ObjectPath
	if err := c.call(ssPath, ssService+".OpenSession", "plain", dbus.MakeVariant("")).Store(&out, &path); err != nil {
		return "", nil, fmt.Errorf("open a Secret Service session: %w", err)
	}
	return path, func() { _ = c.call(path, "org.freedesktop.Secret.Session.Close").Err }, nil
}

// Get reads the key of id; none matches keyring.ErrNotFound.
func (s SecretService) Get(id string) (string, error) {
	c, done, err := s.open()
	if err != nil {
		return "", err
	}
	defer done()
	items, err := c.search(id)
	if err != nil {
		return "", bounded(c.ctx, err)
	}
	if len(items) == 0 {
		return "", keyring.ErrNotFound
	}
	session, end, err := c.session()
	if err != nil {
		return "", bounded(c.ctx, err)
	}
	defer end()
	var secret ssSecret
	if err := c.call(items[0], ssItem+".GetSecret", session).Store(&secret); err != nil {
		return "", bounded(c.ctx, fmt.Errorf("read the key of %s from the keyring: %w", id, err))
	}
	return string(secret.Value), nil
}

// Set files key under id, replacing the one there.
func (s SecretService) Set(id, key string) error {
	c, done, err := s.open()
	if err != nil {
		return err
	}
	defer done()
	session, end, err := c.session()
	if err != nil {
		return bounded(c.ctx, err)
	}
	defer end()
	props := map[string]dbus.Variant{
		ssItem + ".Label":      dbus.MakeVariant(fmt.Sprintf("Password for '%s' on '%s'", id, KeyringService)),
		ssItem + ".Attributes": dbus.MakeVariant(attributes(id)),
	}
	secret := ssSecret{Session: session, Parameters: []byte{}, Value: []byte(key), ContentType: "text/plain; charset=utf8"}
	var item, prompt dbus.ObjectPath
	if err := c.call(c.collection, ssCollection+".CreateItem", props, secret, true).Store(&item, &prompt); err != nil {
		return bounded(c.ctx, fmt.Errorf("file the key of %s in the keyring: %w", id, err))
	}
	if prompt != noPrompt {
		// Locked between open and now: the prompt is left unshown.
		return ErrLocked
	}
	return nil
}

// Delete forgets the key of id; none matches keyring.ErrNotFound.
func (s SecretService) Delete(id string) error {
	c, done, err := s.open()
	if err != nil {
		return err
	}
	defer done()
	items, err := c.search(id)
	if err != nil {
		return bounded(c.ctx, err)
	}
	if len(items) == 0 {
		return keyring.ErrNotFound
	}
	for _, item := range items {
		var prompt dbus.ObjectPath
		if err := c.call(item, ssItem+".Delete").Store(&prompt); err != nil {
			return bounded(c.ctx, fmt.Errorf("remove the key of %s from the keyring: %w", id, err))
		}
		if prompt != noPrompt {
			return ErrLocked
		}
	}
	return nil
}
