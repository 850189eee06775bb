package service

import (
	"context"
	"fmt"
	"time"

	"conch/backend/host"
	"conch/backend/provider"
	"conch/backend/store"
	"conch/backend/taskrun"
)

// testTimeout bounds a connection test: connecting (ssh's own timeout),
// the key scan and the probe.
const testTimeout = 60 * time.Second

func (s *Service) hosts() (*host.Service, error) {
	if s.cfg.Hosts == nil {
		return nil, errUnavailable("Hosts")
	}
	return s.cfg.Hosts, nil
}

// ListHosts returns every host, oldest first.
func (s *Service) ListHosts() (host.List, error) {
	h, err := s.hosts()
	if err != nil {
		return host.List{}, err
	}
	return h.List()
}

// GetHost returns one host.
func (s *Service) GetHost(id string) (store.Host, error) {
	h, err := s.hosts()
	if err != nil {
		return store.Host{}, err
	}
	return h.Get(id)
}

// PutHost adds a host, or changes it when req carries its rev.
func (s *Service) PutHost(id string, req host.PutRequest) (store.Host, error) {
	h, err := s.hosts()
	if err != nil {
		return store.Host{}, err
	}
	if req.Models != nil {
		if err := s.checkHostModels(*req.Models); err != nil {
			return store.Host{}, err
		}
	}
	rec, _, err := h.Put(id, req)
	return rec, err
}

// checkHostModels refuses an OK for what is not a connected API-model
// provider: the coding-agent CLIs a host has are its own, and the shell
// is every computer's.
func (s *Service) checkHostModels(ids []string) error {
	for _, id := range ids {
		if s.cfg.Providers == nil {
			return fmt.Errorf("%w: no providers are connected here", taskrun.ErrInvalid)
		}
		l, err := s.cfg.Providers.Get(context.Background(), id)
		if err != nil {
			return fmt.Errorf("%w: %q is not a connected provider", taskrun.ErrInvalid, id)
		}
		if l.Category != provider.ChatOnly && l.Category != provider.LocalModel {
			return fmt.Errorf("%w: %s is not an API-model provider: a host uses its own coding-agent CLIs and shell", taskrun.ErrInvalid, l.Name)
		}
	}
	return nil
}

// DeleteHost removes a host.
func (s *Service) DeleteHost(id string) error {
	h, err := s.hosts()
	if err != nil {
		return err
	}
	return h.Delete(id)
}

// TestHost connects to a host and reports what it found there.
func (s *Service) TestHost(id string) (host.TestResult, error) {
	h, err := s.hosts()
	if err != nil {
		return host.TestResult{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return h.Test(ctx, id)
}

// AcceptHostKey accepts the key waiting for a host's OK.
func (s *Service) AcceptHostKey(id string, req host.AcceptRequest) (store.Host, error) {
	h, err := s.hosts()
	if err != nil {
		return store.Host{}, err
	}
	return h.AcceptKey(id, req)
}
