//go:build unix

package chat_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/provider"
	"conch/backend/provider/agentcli"
	"conch/backend/task"
	"conch/backend/testrig/agentbin"
	"conch/backend/testrig/agentrig"
	"conch/backend/testrig/modelserver"
	"conch/backend/testrig/modelserver/anthropic"
)

// Conch is each real CLI's permission authority: in ask its question
// reaches the chat and the answer holds; in plan a write is refused
// without asking; once the chat is tainted even auto asks. The CLIs talk
// to scripted model servers (agentrig).

// agentChat is a chat on the real CLI a, whose model answers in turn.
func agentChat(t *testing.T, a agentrig.Agent, mode task.Mode, replies ...modelserver.Reply) (*env, conversation.Conversation) {
	t.Helper()
	rig, _ := a.Start(t, func(turn modelserver.Turn) modelserver.Reply {
		if n := len(turn.Results()); n < len(replies) {
			return replies[n]
		}
		return replies[len(replies)-1]
	})
	p := agentcli.New(a.Kind, agentcli.Config{ID: a.ID, Name: a.Name, Binary: rig.Bin, Env: rig.Env, Model: a.Model})
	e := setup(t, newScripted(), opts{cfg: func(c *chat.Config) { c.Providers = provider.Fixed{a.ID: p} }})
	c, err := e.m.Create(chat.CreateRequest{Provider: a.ID, Mode: string(mode), Cwd: e.dir})
	if err != nil {
		t.Fatal(err)
	}
	return e, c
}

func steps(ms []conversation.Message) []string {
	var out []string
	for _, m := range ms {
		if m.Kind == conversation.Step {
			out = append(out, m.Text)
		}
	}
	return out
}

func TestAnAgentsQuestionReachesTheChatAndTheAnswerHolds(t *testing.T) {
	for _, a := range agentrig.Agents {
		for _, allow := range []bool{true, false} {
			t.Run(a.ID+"/"+map[bool]string{true: "allowed", false: "declined"}[allow], func(t *testing.T) {
				t.Parallel()
				e, c := agentChat(t, a, task.Ask, modelserver.Reply{Calls: []modelserver.Call{a.Run("echo hi > made.txt")}}, modelserver.Reply{Text: "Finished."})
				if _, err := e.m.Send(c.ID, "make the file"); err != nil {
					t.Fatal(err)
				}
				asked := e.asking(t, c.ID)
				if want := "Run `echo hi > made.txt` in " + e.dir + "?"; asked.Ask.Detail != want {
					t.Errorf("asked %q, want %q", asked.Ask.Detail, want)
				}
				if _, err := e.m.Answer(c.ID, asked.Ask.ID, allow); err != nil {
					t.Fatal(err)
				}
				e.idle(t, c.ID)
				ms := e.messages(t, c.ID)
				_, err := os.Stat(filepath.Join(e.dir, "made.txt"))
				want := []string{"Ran echo hi > made.txt"}
				if !allow {
					want = []string{"Declined: run `echo hi > made.txt` in " + e.dir}
				}
				if (err == nil) != allow || !slices.Equal(steps(ms), want) {
					t.Errorf("made.txt: %v; steps %q, want %q\n%s", err, steps(ms), want, e.transcript(t, c.ID))
				}
				if last := ms[len(ms)-1]; last.Kind != conversation.Assistant || last.Text != "Finished." {
					t.Errorf("last message %+v", last)
				}
			})
		}
	}
}

// An agent's question about an edit shows the chat the change: what the
// line was and what it would be, as Conch's own edit_file asks.
func TestAnAgentsEditQuestionShowsTheChange(t *testing.T) {
	for _, a := range agentrig.Agents {
		t.Run(a.ID, func(t *testing.T) {
			t.Parallel()
			e, c := agentChat(t, a, task.Ask, modelserver.Reply{Calls: []modelserver.Call{a.Edit("todo.md", "- [ ] call the bank", "- [x] call the bank")}}, modelserver.Reply{Text: "Ticked."})
			if err := os.WriteFile(filepath.Join(e.dir, "todo.md"), []byte("# Today\n- [ ] call the bank\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := e.m.Send(c.ID, "tick it"); err != nil {
				t.Fatal(err)
			}
			asked := e.asking(t, c.ID)
			ch := asked.Ask.Change
			if ch == nil || ch.Path != "todo.md" || ch.New || !strings.Contains(ch.Before, "- [ ] call the bank") || !strings.Contains(ch.After, "- [x] call the bank") {
				t.Fatalf("asked %+v, change %+v", asked.Ask, ch)
			}
			if _, err := e.m.Answer(c.ID, asked.Ask.ID, true); err != nil {
				t.Fatal(err)
			}
			e.idle(t, c.ID)
			for _, m := range e.messages(t, c.ID) {
				if m.Kind == conversation.AskKind && (m.Ask.Change == nil || m.Ask.Change.After != ch.After) {
					t.Errorf("the answered question keeps no change: %+v", m.Ask)
				}
			}
		})
	}
}

// While Claude Code retries a rate limit the chat says so, each retry as
// a step, before the limit that ends the turn, at the newest Claude Code
// and the oldest Conch works with.
func TestClaudeCodesRetriesShowInTheChat(t *testing.T) {
	for _, in := range agentbin.Installs {
		t.Run(string(in), func(t *testing.T) {
			t.Parallel()
			a := agentrig.AgentsAt(in)[0]
			a.Start = func(t testing.TB, brain modelserver.Brain) (agentrig.Rig, func() int) {
				rig, srv := agentrig.ClaudeAt(t, in, brain, 2)
				return rig, func() int { return len(srv.Turns()) }
			}
			limit := anthropic.RateLimitSaying("This request would exceed the rate limit for your organization of 50 requests per minute.", "2")
			e, c := agentChat(t, a, task.Auto, limit)
			if _, err := e.m.Send(c.ID, "hello"); err != nil {
				t.Fatal(err)
			}
			e.idle(t, c.ID)
			ms := e.messages(t, c.ID)
			want := []string{"Claude Code is retrying after a rate limit (1 of 2)", "Claude Code is retrying after a rate limit (2 of 2)"}
			last := ms[len(ms)-1]
			if !slices.Equal(steps(ms), want) || last.Kind != conversation.Notice || last.Limit == nil || !strings.Contains(last.Text, "50 requests per minute") {
				t.Errorf("steps %q, want %q; last %+v\n%s", steps(ms), want, last, e.transcript(t, c.ID))
			}
		})
	}
}

func TestPlanModeRefusesAnAgentsWriteWithoutAsking(t *testing.T) {
	for _, a := range agentrig.Agents {
		t.Run(a.ID, func(t *testing.T) {
			t.Parallel()
			e, c := agentChat(t, a, task.Plan, modelserver.Reply{Calls: []modelserver.Call{a.Write("plan.txt", "x")}}, modelserver.Reply{Text: "I would write plan.txt."})
			if _, err := e.m.Send(c.ID, "write it"); err != nil {
				t.Fatal(err)
			}
			e.idle(t, c.ID)
			if _, err := os.Stat(filepath.Join(e.dir, "plan.txt")); err == nil {
				t.Errorf("plan.txt was written in plan mode\n%s", e.transcript(t, c.ID))
			}
			for _, m := range e.messages(t, c.ID) {
				if m.Kind == conversation.AskKind {
					t.Errorf("plan mode asked: %+v", m.Ask)
				}
			}
		})
	}
}

// A command that reads outside the folder taints the chat, whether the
// CLI asked about it or ran it as a read; after that even auto asks.
func TestATaintedAgentChatAsksEvenInAuto(t *testing.T) {
	for _, a := range agentrig.Agents {
		t.Run(a.ID, func(t *testing.T) {
			t.Parallel()
			e, c := agentChat(t, a, task.Auto,
				modelserver.Reply{Calls: []modelserver.Call{a.Run("cat /etc/hostname")}},
				modelserver.Reply{Calls: []modelserver.Call{a.Write("after.txt", "x")}},
				modelserver.Reply{Text: "Done."})
			if _, err := e.m.Send(c.ID, "look, then write"); err != nil {
				t.Fatal(err)
			}
			asked := e.asking(t, c.ID)
			if !asked.Tainted || !strings.Contains(asked.Ask.Detail, "after.txt") || !strings.Contains(asked.Ask.Detail, "tainted") {
				t.Errorf("tainted %v, asked %+v\n%s", asked.Tainted, asked.Ask, e.transcript(t, c.ID))
			}
			if _, err := e.m.Answer(c.ID, asked.Ask.ID, false); err != nil {
				t.Fatal(err)
			}
			e.idle(t, c.ID)
			if _, err := os.Stat(filepath.Join(e.dir, "after.txt")); err == nil {
				t.Errorf("after.txt was written though declined")
			}
		})
	}
}
