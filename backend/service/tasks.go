package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"conch/backend/output"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// TaskList is every task and the slot use (GET /api/tasks).
type TaskList struct {
	Tasks      []task.Task        `json:"tasks" ts:"notnull"`
	Concurrent taskrun.Concurrent `json:"concurrent"`
}

// OutputChunk is a piece of a task's output and where the next one starts.
type OutputChunk struct {
	Data string `json:"data"`
	Next int64  `json:"next"`
}

// MaxOutputRead bounds one read of a task's output.
const MaxOutputRead = 1 << 20

func (s *Service) tasks() (*taskrun.Runner, error) {
	if s.cfg.Tasks == nil {
		return nil, errUnavailable("Tasks")
	}
	return s.cfg.Tasks, nil
}

// ListTasks returns every task, oldest first, and the slot use.
func (s *Service) ListTasks() (TaskList, error) {
	r, err := s.tasks()
	if err != nil {
		return TaskList{}, err
	}
	tasks, c := r.List()
	return TaskList{Tasks: tasks, Concurrent: c}, nil
}

// CreateTask starts a task: from a chat (conversationId) as a chat of its
// own, with the chat's powers; else a shell command.
func (s *Service) CreateTask(req taskrun.CreateRequest) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	if req.ConversationID == "" {
		return r.Create(req)
	}
	if s.cfg.Handoff == nil {
		return task.Task{}, errUnavailable("Chats")
	}
	return s.cfg.Handoff.Background(context.Background(), req)
}

// GetTask returns one task.
func (s *Service) GetTask(id string) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	return r.Get(id)
}

// ReadOutput returns up to max bytes (at most MaxOutputRead; 0 means that
// much) of a task's output from offset, cut before a character cut in
// half: the next read starts with its first byte. An offset past the end
// is clamped to the end.
func (s *Service) ReadOutput(id string, offset int64, max int) (OutputChunk, error) {
	if _, err := s.GetTask(id); err != nil {
		return OutputChunk{}, err
	}
	if offset < 0 {
		return OutputChunk{}, fmt.Errorf("%w: offset must be a whole number of bytes, 0 or more", taskrun.ErrInvalid)
	}
	if max < 0 {
		return OutputChunk{}, fmt.Errorf("%w: max must be a whole number of bytes, 1 or more", taskrun.ErrInvalid)
	}
	if max == 0 || max > MaxOutputRead {
		max = MaxOutputRead
	}
	b, next, err := s.cfg.Logs.ReadAt(id, offset, max)
	if errors.Is(err, fs.ErrNotExist) {
		return OutputChunk{Next: 0}, nil // nothing written yet
	}
	if err != nil {
		return OutputChunk{Next: offset}, fmt.Errorf("read the output of task %s: %w", id, err)
	}
	if len(b) == 0 {
		return OutputChunk{Next: next}, nil
	}
	b = output.WholeRunes(b)
	return OutputChunk{Data: string(b), Next: offset + int64(len(b))}, nil
}

// StopTask stops a waiting, working or asking task.
func (s *Service) StopTask(id string) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	return r.StopTask(id)
}

// RetryTask runs a finished task again from the start.
func (s *Service) RetryTask(id string) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	return r.Retry(id)
}

// ResumeTask carries an interrupted, failed or stopped chat task on from
// where it stopped, with its whole transcript.
func (s *Service) ResumeTask(id string) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	return r.Resume(id)
}

// DeleteTask removes a task that is not working, and its output; its chat
// stays.
func (s *Service) DeleteTask(id string) error {
	r, err := s.tasks()
	if err != nil {
		return err
	}
	return r.Delete(id)
}

// AnswerTask answers a task's pending question.
func (s *Service) AnswerTask(id, askID string, allow bool) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	if askID == "" {
		return task.Task{}, fmt.Errorf("%w: askId is empty", taskrun.ErrInvalid)
	}
	return r.Answer(id, askID, allow)
}
