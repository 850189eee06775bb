// Package secrettest runs a real Secret Service for tests: gnome-keyring-
// daemon on a private D-Bus session bus, with its home, runtime and data
// directories in the test's temporary directory, so nothing touches the
// machine's own keyring. The bus activates nothing of the machine's (its
// configuration names no service directory of the system), so a bus with
// no keyring on it stays without one.
//
// It needs a Unix system: the daemon is stopped and resumed with signals.
package secrettest
