package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"conch/backend/output"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// TaskList is a list of tasks (GET /api/tasks): with no query, every task
// that is not finished and the first page of the finished ones; else one
// page of what the query asked for. Next is the cursor of the page after
// (the finished ones' with no query; "" when there is no more). Counts is
// how many tasks there are in each status, whatever was asked.
type TaskList struct {
	Tasks      []task.Task         `json:"tasks" ts:"notnull"`
	Next       string              `json:"next"`
	Counts     map[task.Status]int `json:"counts" ts:"notnull"`
	Concurrent taskrun.Concurrent  `json:"concurrent"`
}

// TaskQuery asks for a page of tasks. Group (needs-you, working, waiting,
// finished) or Conversation (the tasks a chat sent, newest first) picks
// the list; with neither, the list is the overview TaskList describes.
// Statuses narrow a group; Query (words of the title) narrows any list
// but a chat's; Cursor is the
// Next of the page before; Limit is the page's size (DefaultPage when 0,
// at most MaxPage).
type TaskQuery struct {
	Group        string        `json:"group,omitempty"`
	Statuses     []task.Status `json:"statuses,omitempty"`
	Query        string        `json:"q,omitempty"`
	Conversation string        `json:"conversation,omitempty"`
	Cursor       string        `json:"cursor,omitempty"`
	Limit        int           `json:"limit,omitempty"`
}

// DefaultPage and MaxPage bound a page of tasks.
const (
	DefaultPage = 100
	MaxPage     = 500
)

// maxQuery bounds the words a title search holds.
const maxQuery = 200

// normalize checks q and fills in what it implies: a group from its
// statuses, the page size.
func (q *TaskQuery) normalize() error {
	switch {
	case q.Limit == 0:
		q.Limit = DefaultPage
	case q.Limit < 0 || q.Limit > MaxPage:
		return fmt.Errorf("%w: limit must be from 1 to %d", taskrun.ErrInvalid, MaxPage)
	}
	if len(q.Query) > maxQuery {
		return fmt.Errorf("%w: the search is longer than %d characters", taskrun.ErrInvalid, maxQuery)
	}
	if q.Group != "" && !store.Group(q.Group).Valid() {
		return fmt.Errorf("%w: unknown group %q (needs-you, working, waiting or finished)", taskrun.ErrInvalid, q.Group)
	}
	for _, st := range q.Statuses {
		if !st.Valid() {
			return fmt.Errorf("%w: unknown status %q", taskrun.ErrInvalid, st)
		}
		g := string(store.GroupOf(st))
		switch {
		case q.Group == "":
			q.Group = g
		case q.Group != g:
			return fmt.Errorf("%w: status %q is not in the group %q; ask for one group at a time", taskrun.ErrInvalid, st, q.Group)
		}
	}
	if q.Conversation != "" && (q.Group != "" || q.Query != "") {
		return fmt.Errorf("%w: a chat's tasks cannot be narrowed by group, status or search", taskrun.ErrInvalid)
	}
	if q.Cursor != "" && q.Group == "" && q.Conversation == "" {
		// The overview's cursor is the finished group's.
		q.Group = string(store.GroupFinished)
	}
	return nil
}

func (s *Service) tasks() (*taskrun.Runner, error) {
	if s.cfg.Tasks == nil {
		return nil, errUnavailable("Tasks")
	}
	return s.cfg.Tasks, nil
}

// ListTasks returns the tasks q asks for (see TaskQuery), the counts and
// the slot use.
func (s *Service) ListTasks(q TaskQuery) (TaskList, error) {
	r, err := s.tasks()
	if err != nil {
		return TaskList{}, err
	}
	if err := q.normalize(); err != nil {
		return TaskList{}, err
	}
	counts, err := r.Counts()
	if err != nil {
		return TaskList{}, err
	}
	if counts == nil {
		counts = map[task.Status]int{}
	}
	l := TaskList{Counts: counts, Concurrent: r.Concurrent()}
	var p store.Page
	switch {
	case q.Conversation != "":
		p, err = r.TasksOf(q.Conversation, q.Cursor, q.Limit)
	case q.Group != "":
		p, err = r.Page(store.Group(q.Group), store.TaskFilter{Statuses: q.Statuses, Query: q.Query}, q.Cursor, q.Limit)
	default:
		// The overview: every task not finished, then the first page of
		// finished ones, both narrowed by the search when there is one.
		f := store.TaskFilter{Query: q.Query}
		active, _ := r.Active()
		active = slices.DeleteFunc(active, func(t task.Task) bool { return !f.Matches(t) })
		p, err = r.Page(store.GroupFinished, f, "", q.Limit)
		p.Tasks = append(active, p.Tasks...)
	}
	if err != nil {
		return TaskList{}, err
	}
	l.Tasks, l.Next = p.Tasks, p.Next
	return l, nil
}

// OutputChunk is a piece of a task's output and where the next one starts.
type OutputChunk struct {
	Data string `json:"data"`
	Next int64  `json:"next"`
}

// MaxOutputRead bounds one read of a task's output.
const MaxOutputRead = 1 << 20

// CreateTask starts a task: from a chat (conversationId) as a chat of its
// own, with the chat's powers; on a runner, a chat task another Conch sent
// (a coding-agent CLI named, no chat); else a shell command.
func (s *Service) CreateTask(req taskrun.CreateRequest) (task.Task, error) {
	r, err := s.tasks()
	if err != nil {
		return task.Task{}, err
	}
	sent := s.cfg.Runner && req.ConversationID == "" && req.Options.Provider != "" && req.Options.Provider != task.ShellProvider
	switch {
	case sent && s.cfg.Handoff != nil:
		return s.cfg.Handoff.StartSent(context.Background(), req)
	case req.ConversationID == "":
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
