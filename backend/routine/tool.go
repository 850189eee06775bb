package routine

import (
	"context"
	"encoding/json"
	"fmt"

	"conch/backend/conversation"
	"conch/backend/errcode"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/tool"
)

// ScheduleTool is the tool that makes a routine.
const ScheduleTool = "schedule_routine"

// Tool is schedule_routine for a turn of c: a routine in c's folder, mode
// and provider (a command on the shell). Making one is a side effect like
// running a command, so it passes the gate: ask mode asks, plan refuses.
func (s *Service) Tool(c conversation.Conversation) tool.Tool {
	return tool.Tool{
		Name: ScheduleTool,
		Description: "Make a routine: work that runs again and again on a schedule, each run a task in a chat of its own " +
			"(\"do this every weekday at 9\"). It runs in this chat's folder and mode, on this chat's provider; a command runs on the shell. " +
			"Use it when the person asks for something to be done regularly or at set times. Schedules: " + Forms + ".",
		Schema: tool.ObjectSchema([]string{"text", "schedule"}, `"text":{"type":"string","description":"What each run does: instructions to an assistant that sees nothing of this chat, or the shell command."},`+
			`"schedule":{"type":"string","description":"When it runs, in plain words (every weekday at 9:00) or as a 5-field cron expression."},`+
			`"name":{"type":"string","description":"A short name for its card."},`+
			`"kind":{"type":"string","enum":["prompt","command"],"description":"prompt (the default) or command (a shell command)."},`+
			`"catchUp":{"type":"boolean","description":"Run once when Conch starts if a run was missed while it was off."}`),
		Effect: tool.Command,
		Title: func(args json.RawMessage) string {
			var a struct{ Name, Text, Schedule string }
			_ = json.Unmarshal(args, &a)
			name := a.Name
			if name == "" {
				name = task.TitleFrom(a.Text)
			}
			return fmt.Sprintf("Schedule %q %s", name, a.Schedule)
		},
		Run: func(ctx context.Context, _ tool.Env, args json.RawMessage) (string, error) {
			return s.schedule(ctx, c, args)
		},
	}
}

func (s *Service) schedule(ctx context.Context, c conversation.Conversation, args json.RawMessage) (string, error) {
	var a struct {
		Text     string            `json:"text"`
		Schedule string            `json:"schedule"`
		Name     string            `json:"name"`
		Kind     store.RoutineKind `json:"kind"`
		CatchUp  bool              `json:"catchUp"`
	}
	if err := tool.Decode(ScheduleTool, args, &a, "text", "schedule"); err != nil {
		return "", err
	}
	req := CreateRequest{Name: a.Name, Kind: a.Kind, Text: a.Text, Schedule: a.Schedule, Cwd: c.Cwd, Mode: string(c.Mode),
		Provider: c.Provider, Model: c.Model, CatchUp: a.CatchUp, FromConversationID: c.ID}
	if c.Provider == task.ShellProvider || a.Kind == store.RoutineCommand {
		req.Kind, req.Provider, req.Model = store.RoutineCommand, "", ""
	}
	card, err := s.Create(ctx, req)
	if err != nil {
		return "", fmt.Errorf("%s: %s", ScheduleTool, errcode.Sentence(err))
	}
	when := card.Routine.Schedule
	if card.Words != "" {
		when = card.Words + " (" + card.Routine.Schedule + ")"
	}
	next := ""
	if card.Next != nil {
		next = " Its first run is " + card.Next.Format("Monday 2 January at 15:04 MST") + "."
	}
	return fmt.Sprintf("Made the routine %q: it runs %s, in %s mode in %s; each run is a task in a chat of its own, and the person is told when one finishes.%s It is on the Routines page, where it can be paused, run now, changed or deleted.",
		card.Routine.Name, when, card.Routine.Mode, card.Routine.Cwd, next), nil
}
