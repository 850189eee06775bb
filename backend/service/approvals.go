package service

import (
	"sort"

	"conch/backend/ask"
)

// ApprovalKind says whose question an approval is, and so where it is
// answered.
type ApprovalKind string

const (
	// ApprovalTask is a task's question: answer it with
	// POST /api/tasks/:taskId/answer.
	ApprovalTask ApprovalKind = "task"
	// ApprovalChat is a chat's own question: answer it with
	// POST /api/conversations/:conversationId/asks/:askId.
	ApprovalChat ApprovalKind = "chat"
)

// Approval is one pending question in the approval inbox, a task's or a
// chat's: one list, so every surface counts the same "needs you".
type Approval struct {
	Kind ApprovalKind `json:"kind"`
	// TaskID is the task that asks ("" for a chat's question).
	TaskID string `json:"taskId,omitempty"`
	// ConversationID is the chat the question waits in: the chat's own,
	// or the task's chat ("" for a shell command, which has none).
	ConversationID string       `json:"conversationId"`
	Title          string       `json:"title"`
	Cwd            string       `json:"cwd"`
	Ask            ask.Question `json:"ask"`
}

// Approvals lists every pending question, the tasks' and the chats',
// oldest first. A task chat's question is its task's, so it is listed
// once, as the task's. Either part missing (a test's service) lists none
// of its own.
func (s *Service) Approvals() ([]Approval, error) {
	out := []Approval{}
	if s.cfg.Tasks != nil {
		for _, a := range s.cfg.Tasks.Approvals() {
			out = append(out, Approval{Kind: ApprovalTask, TaskID: a.TaskID, ConversationID: a.ConversationID, Title: a.Title, Cwd: a.Cwd, Ask: a.Ask})
		}
	}
	if s.cfg.Chats != nil {
		asking, err := s.cfg.Chats.Asking()
		if err != nil {
			return nil, err
		}
		for _, c := range asking {
			if c.Ask == nil || c.Ask.Answer != "" {
				continue
			}
			out = append(out, Approval{Kind: ApprovalChat, ConversationID: c.ID, Title: c.Title, Cwd: c.Cwd, Ask: *c.Ask})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ask.AskedAt.Before(out[j].Ask.AskedAt) })
	return out, nil
}
