// Package sshd starts a real OpenSSH server on loopback for a test: its own
// sshd (never the system's), a generated host key, public-key login only,
// logging in as a Unix user made for the test and removed after it, with a
// generated client key and a client ssh config naming it by an alias. It
// needs root (to make the user) and Debian's openssh-server; without them
// the test skips and says why.
package sshd
