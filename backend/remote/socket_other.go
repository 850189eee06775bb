//go:build !unix

package remote

import (
	"errors"
	"net"
)

// Socket is the runner's listening socket; a runner serves only on a
// Unix host.
type Socket struct{}

// Listen refuses: the runner runs on Linux and macOS hosts.
func Listen(path string) (*Socket, error) {
	return nil, errors.New("conch runner runs on Linux and macOS hosts, not here")
}

// Listener is nil here.
func (s *Socket) Listener() net.Listener { return nil }

// Path is empty here.
func (s *Socket) Path() string { return "" }

// Close does nothing here.
func (s *Socket) Close() error { return nil }
