package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/chatcompletions"
)

// The scripted model is a real HTTP server on loopback (a paced
// chatcompletions server) that speaks the OpenAI Chat Completions wire
// format as a server does (SSE chunks, a tool call's arguments split
// across chunks, usage last), so `conch serve` talks to it through its
// real openai provider. It answers from the
// transcript alone, so a task that resumes after a crash carries on where
// its transcript says it stands, and it keeps every request it got.

// scriptedModel is the model id the scripted server lists.
const scriptedModel = "crash-model"

// request is one chat request the server got.
type request struct{ modelserver.Turn }

// task reports whether the request comes from a task's own chat.
func (r request) task() bool { return strings.Contains(r.System, "handed off from another chat") }

// marked is the [crash-…] marker of the first user message: which task (or
// which parent chat's errand) the request is about.
func (r request) marker() string {
	if mm := markerRe.FindStringSubmatch(r.FirstUser()); mm != nil {
		return mm[1]
	}
	return ""
}

var markerRe = regexp.MustCompile(`\[((?:delegate |background )?crash-[0-9a-z-]+)\]`)

// calls are the tool calls of the request's assistant messages, oldest first.
func (r request) calls() []modelserver.Call {
	var out []modelserver.Call
	for _, m := range r.Messages {
		out = append(out, m.Calls...)
	}
	return out
}

// answered is the names of the tools whose calls have a result, but for a
// call Conch stopped while it ran: a resumed task never runs that again on
// its own, so the model calls it again (this model's choice; the gate
// still decides).
func (r request) answered() map[string]bool {
	names := map[string]string{}
	for _, c := range r.calls() {
		names[c.ID] = c.Name
	}
	out := map[string]bool{}
	for _, m := range r.Results() {
		cut := strings.Contains(m.Text, cutOff)
		out[names[m.CallID]] = !cut
	}
	return out
}

// cutOff begins the result of a call that was running when Conch stopped.
const cutOff = "Conch stopped while this ran; it may have partly run."

func (r request) transcript() string {
	b, _ := json.Marshal(r.Messages)
	return string(b)
}

// toolCall is a reply of one call of tool with args.
func toolCall(tool string, args any) modelserver.Reply {
	b, _ := json.Marshal(args)
	return modelserver.Reply{Calls: []modelserver.Call{{Name: tool, Args: b}}}
}

// chatCommand is what a task's model runs: numbered lines, slowly, into
// the task's log.
const chatCommand = "for i in $(seq 1 25); do echo chat-$i; sleep 0.02; done"

// script is the whole model. A task (or helper) writes <marker>.txt, runs
// chatCommand, then reports; a parent chat hands its errand off once (a
// delegate of two helpers in worktrees, or a background task) and
// afterwards only acknowledges.
func script(r request) modelserver.Reply {
	mk := r.marker()
	if r.task() {
		done := r.answered()
		switch {
		case !done["write_file"]:
			return toolCall("write_file", map[string]string{"path": mk + ".txt", "content": mk + "\n"})
		case !done["run_command"]:
			return toolCall("run_command", map[string]string{"command": chatCommand})
		}
		return toolCall("report_result", map[string]string{"summary": mk + " is done."})
	}
	called := map[string]bool{}
	for _, c := range r.calls() {
		called[c.Name] = true
	}
	switch {
	case strings.HasPrefix(mk, "delegate ") && !called["delegate"]:
		tag := strings.TrimPrefix(mk, "delegate ")
		var parts []map[string]any
		for _, p := range []string{"a", "b"} {
			parts = append(parts, map[string]any{"title": "Part " + p + " of " + tag,
				"instructions": fmt.Sprintf("Write the file and count. [%s-%s]", tag, p), "worktree": true})
		}
		return toolCall("delegate", map[string]any{"parts": parts})
	case strings.HasPrefix(mk, "background ") && !called["start_background_task"]:
		tag := strings.TrimPrefix(mk, "background ")
		return toolCall("start_background_task", map[string]string{
			"text": "Write the file and count. [" + tag + "]", "title": tag})
	}
	return modelserver.Reply{Text: "Noted: all of it is in hand."}
}

// modelServer serves script over loopback, paced like a model, and keeps
// every request.
type modelServer struct {
	*chatcompletions.Server
	base string // http://127.0.0.1:PORT/v1
}

func startModel(t *testing.T, seed uint64) *modelServer {
	t.Helper()
	srv := chatcompletions.New(t, func(turn modelserver.Turn) modelserver.Reply { return script(request{turn}) },
		chatcompletions.Models(scriptedModel), chatcompletions.Paced(seed))
	return &modelServer{Server: srv, base: srv.BaseURL()}
}

// last is the newest request about marker mk from a task's chat.
func (ms *modelServer) last(mk string) (request, bool) {
	turns := ms.Turns()
	for i := len(turns) - 1; i >= 0; i-- {
		if r := (request{turns[i]}); r.task() && r.marker() == mk {
			return r, true
		}
	}
	return request{}, false
}
