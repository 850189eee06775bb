package service

import (
	"context"

	"conch/backend/routine"
	"conch/backend/task"
)

func (s *Service) routines() (*routine.Service, error) {
	if s.cfg.Routines == nil {
		return nil, errUnavailable("Routines")
	}
	return s.cfg.Routines, nil
}

// ListRoutines returns every routine's card, oldest first.
func (s *Service) ListRoutines() (routine.List, error) {
	r, err := s.routines()
	if err != nil {
		return routine.List{}, err
	}
	return r.List()
}

// CreateRoutine makes a routine (POST /api/routines).
func (s *Service) CreateRoutine(req routine.CreateRequest) (routine.Card, error) {
	r, err := s.routines()
	if err != nil {
		return routine.Card{}, err
	}
	return r.Create(context.Background(), req)
}

// GetRoutine returns one routine's card.
func (s *Service) GetRoutine(id string) (routine.Card, error) {
	r, err := s.routines()
	if err != nil {
		return routine.Card{}, err
	}
	return r.Get(id)
}

// PatchRoutine changes what req sends; paused pauses and resumes.
func (s *Service) PatchRoutine(id string, req routine.PatchRequest) (routine.Card, error) {
	r, err := s.routines()
	if err != nil {
		return routine.Card{}, err
	}
	return r.Patch(context.Background(), id, req)
}

// DeleteRoutine removes a routine; its runs' tasks and chats stay.
func (s *Service) DeleteRoutine(id string) error {
	r, err := s.routines()
	if err != nil {
		return err
	}
	return r.Delete(id)
}

// RunRoutine starts a run now; refused while the last one works.
func (s *Service) RunRoutine(id string) (task.Task, error) {
	r, err := s.routines()
	if err != nil {
		return task.Task{}, err
	}
	return r.RunNow(context.Background(), id)
}
