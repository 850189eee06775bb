package service

import (
	"context"
	"fmt"

	"conch/backend/pref"
	"conch/backend/taskrun"
)

func (s *Service) prefs() (Prefs, error) {
	if s.cfg.Prefs == nil {
		return nil, errUnavailable("Preferences")
	}
	return s.cfg.Prefs, nil
}

// Preferences returns the person's preferences.
func (s *Service) Preferences() (pref.Preferences, error) {
	p, err := s.prefs()
	if err != nil {
		return pref.Preferences{}, err
	}
	return p.Preferences()
}

// SetPreferences checks, saves and applies the whole preferences: the
// limits take effect at once, and a fallback must be a connected provider
// that can ask.
func (s *Service) SetPreferences(p pref.Preferences) (pref.Preferences, error) {
	st, err := s.prefs()
	if err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%w: %v", taskrun.ErrInvalid, err)
	}
	if s.cfg.Fallbacks != nil {
		if err := s.cfg.Fallbacks.CheckFallback(context.Background(), p.LimitFallback); err != nil {
			return p, err
		}
	} else if p.LimitFallback != "" {
		return p, fmt.Errorf("%w: there are no chat providers here to fall back on", taskrun.ErrInvalid)
	}
	if err := st.PutPreferences(p); err != nil {
		return p, err
	}
	if s.cfg.Tasks != nil {
		s.cfg.Tasks.SetLimits(p.Limits)
	}
	return p, nil
}
