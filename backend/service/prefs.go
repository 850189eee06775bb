package service

import (
	"context"
	"errors"
	"fmt"

	"conch/backend/autostart"
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
	got, err := p.Preferences()
	if err != nil {
		return got, err
	}
	got.OpenAtLogin = s.atLogin()
	return got, nil
}

// atLogin says whether the system opens Conch at login.
func (s *Service) atLogin() bool {
	if s.cfg.AtLogin == nil {
		return false
	}
	on, err := s.cfg.AtLogin.Enabled()
	return err == nil && on
}

// setAtLogin makes the system open Conch at login, or not, when that
// changes.
func (s *Service) setAtLogin(on bool) error {
	if on == s.atLogin() {
		return nil
	}
	if s.cfg.AtLogin == nil {
		return fmt.Errorf("%w: %v here", taskrun.ErrInvalid, autostart.ErrUnavailable)
	}
	if err := s.cfg.AtLogin.Set(on); err != nil {
		if errors.Is(err, autostart.ErrUnavailable) {
			return fmt.Errorf("%w: %v", taskrun.ErrInvalid, err)
		}
		return err
	}
	return nil
}

// SetPreferences checks, saves and applies the whole preferences: the
// limits take effect at once, a fallback must be a connected provider
// that can ask, and "Open at login" is written to the system (or refused
// where it is not available).
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
	was := s.atLogin()
	if err := s.setAtLogin(p.OpenAtLogin); err != nil {
		return p, err
	}
	if err := st.PutPreferences(p); err != nil {
		_ = s.setAtLogin(was)
		return p, err
	}
	if s.cfg.Tasks != nil {
		s.cfg.Tasks.SetLimits(p.Limits)
	}
	return p, nil
}
