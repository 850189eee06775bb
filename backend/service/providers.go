package service

import (
	"context"

	"conch/backend/provider/registry"
)

// ProviderList is every provider Conch knows (GET /api/providers); keys
// are never in it.
type ProviderList struct {
	Providers []registry.Listing `json:"providers" ts:"notnull"`
}

func (s *Service) providers() (*registry.Registry, error) {
	if s.cfg.Providers == nil {
		return nil, errUnavailable("Providers")
	}
	return s.cfg.Providers, nil
}

// ListProviders returns every provider, connected or found.
func (s *Service) ListProviders() (ProviderList, error) {
	r, err := s.providers()
	if err != nil {
		return ProviderList{}, err
	}
	return ProviderList{Providers: r.List(context.Background())}, nil
}

// GetProvider describes one provider.
func (s *Service) GetProvider(id string) (registry.Listing, error) {
	r, err := s.providers()
	if err != nil {
		return registry.Listing{}, err
	}
	return r.Get(context.Background(), id)
}

// PutProvider connects a provider or changes it; its key goes to the OS
// keyring, or to the store with a notice when there is none.
func (s *Service) PutProvider(id string, cfg registry.PutRequest) (registry.Listing, error) {
	r, err := s.providers()
	if err != nil {
		return registry.Listing{}, err
	}
	return r.Put(context.Background(), id, cfg)
}

// DeleteProvider removes a configured provider and its key.
func (s *Service) DeleteProvider(id string) error {
	r, err := s.providers()
	if err != nil {
		return err
	}
	return r.Delete(id)
}

// FindProviders looks again for what Conch finds on its own (Ollama
// answering, the coding-agent CLIs on PATH, API keys in the environment),
// for the first run's welcome; what it finds is a provider from then on.
func (s *Service) FindProviders() (registry.Found, error) {
	r, err := s.providers()
	if err != nil {
		return registry.Found{}, err
	}
	return r.Detect(context.Background()), nil
}
