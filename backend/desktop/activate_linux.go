package desktop

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"conch/backend/internal/sessionbus"
)

// ActivateRunning asks a Conch window already open in this session to come
// forward (shown and unminimised), and reports whether one answered. Call it
// before opening the home folder: a running Conch holds its store, so a
// second one would otherwise stop at "database is in use" instead of showing
// the window the person is looking for.
func ActivateRunning() bool {
	conn, err := sessionbus.Connect() // a private connection; never starts a bus
	if err != nil {
		return false
	}
	defer conn.Close()
	wd, _ := os.Getwd()
	return activate(conn, singleInstanceID, os.Args[1:], wd)
}

// activate sends the message Wails' single-instance lock listens for (on
// Linux a method on a well-known session-bus name) to the instance that owns
// id, as Wails' own second instance would.
func activate(conn *dbus.Conn, id string, args []string, wd string) bool {
	name, path := singleInstanceBusName(id)
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil || !owned {
		return false
	}
	msg, err := json.Marshal(struct {
		Args             []string `json:"Args"`
		WorkingDirectory string   `json:"WorkingDirectory"`
	}{args, wd})
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return conn.Object(name, path).CallWithContext(ctx, name+".SendMessage", 0, string(msg)).Err == nil
}

// singleInstanceBusName is the bus name and object path Wails v2 derives from
// a SingleInstanceLock's UniqueId on Linux.
func singleInstanceBusName(id string) (string, dbus.ObjectPath) {
	id = "wails_app_" + strings.NewReplacer("-", "_", ".", "_").Replace(id)
	return "org." + id + ".SingleInstance", dbus.ObjectPath("/org/" + id + "/SingleInstance")
}
