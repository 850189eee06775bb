package service

import "conch/backend/version"

// About is what the surfaces need to know of the computer Conch runs on.
type About struct {
	// UserHome is the person's home folder, where a task or chat runs when
	// given no folder; the surfaces write a folder under it as ~/….
	UserHome string `json:"userHome"`
	// Version is the version of the Conch that answers.
	Version string `json:"version"`
}

// About says what the surfaces need to know of the computer Conch runs on:
// its person's home folder, which a browser cannot learn on its own.
func (s *Service) About() (About, error) {
	return About{UserHome: s.cfg.UserHome, Version: version.Get().Version}, nil
}
