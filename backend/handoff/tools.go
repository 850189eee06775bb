package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"conch/backend/budget"
	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/errcode"
	"conch/backend/internal/quantity"
	"conch/backend/provider"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/tool"
)

// The tools a person's chat has for handing work off.
const (
	BackgroundTool = "start_background_task"
	DelegateTool   = "delegate"
)

// MaxParts is the most parts one delegate call takes.
const MaxParts = 6

// stopWait bounds how long a stopped delegate waits for its helpers to end.
const stopWait = 15 * time.Second

// Tools are the hand-off tools of a turn of c (the chat engine's Extra):
// only the person's chats have them, so helpers never nest.
func (s *Service) Tools(c conversation.Conversation) []tool.Tool {
	if c.Origin.IsRun() {
		return nil
	}
	ts := []tool.Tool{s.backgroundTool(c.ID), s.delegateTool(c.ID)}
	if s.cfg.Routines != nil {
		ts = append(ts, s.cfg.Routines.Tool(c))
	}
	return ts
}

func (s *Service) backgroundTool(chatID string) tool.Tool {
	return tool.Tool{
		Name: BackgroundTool,
		Description: "Start a background task: the work runs on its own, as its own chat, while this chat goes on; " +
			"its result comes back here when it finishes and you are told. Use it when the person asks for something " +
			"to be done in the background. It runs in this chat's mode and folder.",
		Schema: tool.ObjectSchema([]string{"text"}, `"text":{"type":"string","description":"What the task should do, written as instructions to another assistant."},`+
			`"title":{"type":"string","description":"A short title for its card."},`+
			`"provider":{"type":"string","description":"Another connected provider's id or name, to hand the task to it."},`+
			`"model":{"type":"string","description":"fast, same, or one of that provider's model ids."},`+
			`"check":{"type":"string","description":"A command that proves the work is done (e.g. go test ./...): run in the task's folder after it reports; the task is done only when it passes, and gets one more turn to fix a failure."},`+
			`"host":{"type":"string","description":"The id of another computer (a host the person set up) to run the task on, with a coding-agent CLI installed there; leave it out to run here."},`+
			`"cwd":{"type":"string","description":"With host: the folder there (~, ~/… or absolute; default ~)."}`),
		Effect: tool.None,
		Title: func(args json.RawMessage) string {
			var a struct {
				Title, Text string
			}
			_ = json.Unmarshal(args, &a)
			return "Started a background task: " + cut(firstNonEmpty(a.Title, task.TitleFrom(a.Text)), 80)
		},
		Run: func(ctx context.Context, _ tool.Env, args json.RawMessage) (string, error) {
			var a struct {
				Text     string `json:"text"`
				Title    string `json:"title"`
				Provider string `json:"provider"`
				Model    string `json:"model"`
				Check    string `json:"check"`
				Host     string `json:"host"`
				Cwd      string `json:"cwd"`
			}
			if err := tool.Decode(BackgroundTool, args, &a, "text"); err != nil {
				return "", err
			}
			if a.Cwd != "" && a.Host == "" {
				return "", fmt.Errorf("%s: cwd goes with host; here the task works in this chat's folder", BackgroundTool)
			}
			parent, err := s.cfg.Chats.Snapshot(chatID)
			if err != nil {
				return "", err
			}
			if err := taskrun.ValidateText(a.Text, a.Title); err != nil {
				return "", fmt.Errorf("%s: %s", BackgroundTool, errcode.Sentence(err))
			}
			if err := checkFits(strings.TrimSpace(a.Check), parent.Mode); err != nil {
				return "", fmt.Errorf("%s: %s", BackgroundTool, errcode.Sentence(err))
			}
			if why, err := s.overBudget(); err != nil || why != "" {
				return "", refusal(why, err)
			}
			sp, err := s.toolSpec(ctx, parent, a.Provider, a.Model, a.Host, a.Cwd)
			if err != nil {
				return "", fmt.Errorf("%s: %v", BackgroundTool, err)
			}
			sp.kind, sp.title, sp.text, sp.mode, sp.wake = task.Background, a.Title, a.Text, parent.Mode, task.WakePending
			if sp.check = strings.TrimSpace(a.Check); sp.check != "" {
				sp.checkRetries = 1
			}
			t, err := s.start(ctx, parent, sp)
			if err != nil {
				return "", err
			}
			if t.Status == task.Failed {
				return "", fmt.Errorf("the task %q could not start: %s", t.Title, t.Error)
			}
			return fmt.Sprintf("Started the background task %q. It runs on its own; its result will come back into this chat when it finishes, and you will get a turn to tell the person.", t.Title), nil
		},
	}
}

// part is one delegate part as the model writes it.
type part struct {
	Title        string `json:"title"`
	Instructions string `json:"instructions"`
	Model        string `json:"model,omitempty"`
	Worktree     bool   `json:"worktree,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Check        string `json:"check,omitempty"`
	Host         string `json:"host,omitempty"`
	Cwd          string `json:"cwd,omitempty"`
}

func (s *Service) delegateTool(chatID string) tool.Tool {
	return tool.Tool{
		Name: DelegateTool,
		Description: fmt.Sprintf("Split a job into 1 to %d parts that helpers do side by side, then get their results back, "+
			"merged as one block per part. Each helper is its own chat in this chat's mode and folder; a code part may ask for "+
			"its own git worktree (its branch is kept when it changed something, for the person to merge). "+
			"Parts use the provider's fast model unless model says same or names one. A part may go to another connected "+
			"provider when the person asks or it plainly suits the part. The call waits until every helper has finished.", MaxParts),
		Schema: tool.ObjectSchema([]string{"parts"}, `"parts":{"type":"array","minItems":1,"maxItems":6,"items":{"type":"object","properties":{`+
			`"title":{"type":"string","description":"A short title for the part's card and its result block."},`+
			`"instructions":{"type":"string","description":"Everything the helper needs to know: it sees nothing of this chat."},`+
			`"model":{"type":"string","description":"fast (default), same, or one of the provider's model ids."},`+
			`"worktree":{"type":"boolean","description":"Give the helper its own git worktree and branch."},`+
			`"provider":{"type":"string","description":"Another connected provider's id or name."},`+
			`"check":{"type":"string","description":"A command that proves the part is done (e.g. npm test), run in its folder (its worktree) after it reports."},`+
			`"host":{"type":"string","description":"The id of another computer (a host the person set up) to do the part on, with a coding-agent CLI installed there; its worktree is made in the repository there."},`+
			`"cwd":{"type":"string","description":"With host: the folder there (~, ~/… or absolute; default ~)."}},`+
			`"required":["title","instructions"],"additionalProperties":false}},`+
			`"cap":{"type":"number","description":"The most, in dollars, the helpers may spend together; at it they pause until the person lets them go on. Leave it out for the person's default."}`),
		Effect: tool.None,
		Title: func(args json.RawMessage) string {
			var a struct {
				Parts []json.RawMessage `json:"parts"`
			}
			_ = json.Unmarshal(args, &a)
			if len(a.Parts) == 1 {
				return "Handed 1 part to a helper"
			}
			return fmt.Sprintf("Split the work into %d helpers", len(a.Parts))
		},
		Run: func(ctx context.Context, _ tool.Env, args json.RawMessage) (string, error) {
			return s.delegate(ctx, chatID, args)
		},
	}
}

// delegate checks every part, starts them all as one group, waits for
// every helper and merges their results. Nothing starts unless every part
// can.
func (s *Service) delegate(ctx context.Context, chatID string, args json.RawMessage) (string, error) {
	parts, jobCap, err := parseParts(args)
	if err != nil {
		return "", err
	}
	if jobCap == nil && s.cfg.Preferences != nil {
		c := s.cfg.Preferences().Budget.JobCap
		jobCap = &c
	}
	parent, err := s.cfg.Chats.Snapshot(chatID)
	if err != nil {
		return "", err
	}
	if why, err := s.overBudget(); err != nil || why != "" {
		return "", refusal(why, err)
	}
	specs, err := s.partSpecs(ctx, parent, parts)
	if err != nil {
		return "", err
	}
	estimates := s.estimate(specs)
	if why := s.fanOutTooDear(parent, estimates); why != "" {
		return "", errors.New(why)
	}
	total := 0.0
	for _, e := range estimates {
		total += e
	}
	if jobCap != nil && *jobCap > 0 && total > *jobCap {
		return "", fmt.Errorf("Refused: %s would cost about %s to start, more than this job's %s cap. Nothing was started; raise the cap or use fewer parts.",
			quantity.Plural(len(specs), "part", "parts"), budget.USD(total), budget.USD(*jobCap))
	}
	ends, err := s.runParts(ctx, parent, specs, estimates, jobCap)
	if err != nil {
		return "", err
	}
	ends = s.markOverlaps(ctx, ends)
	return merge(ends) + overlapNote(ends), nil
}

// partSpecs are the helpers delegate's parts ask for, each on its engine
// and model, in the parent's mode; an engine or a check that cannot be
// starts nothing.
func (s *Service) partSpecs(ctx context.Context, parent conversation.Conversation, parts []part) ([]spec, error) {
	engines := s.cfg.Engines.All(ctx)
	specs := make([]spec, len(parts))
	reached := map[string]bool{}
	for i, p := range parts {
		sp, err := s.partEngine(ctx, engines, parent, p, reached)
		if err != nil && p.Host != "" {
			return nil, fmt.Errorf("%s: part %d (%s): %s Nothing was started", DelegateTool, i+1, p.Title, sentence(err))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: part %d (%s): %v. Nothing was started", DelegateTool, i+1, p.Title, err)
		}
		sp.kind, sp.title, sp.text, sp.mode, sp.wake = task.Helper, p.Title, p.Instructions, parent.Mode, task.WakeNone
		sp.part, sp.parts, sp.worktree, sp.parentEngine = i+1, len(parts), p.Worktree, parent.Provider
		sp.check = strings.TrimSpace(p.Check)
		specs[i] = sp
		if specs[i].check != "" {
			specs[i].checkRetries = 1
		}
		if err := checkFits(specs[i].check, parent.Mode); err != nil {
			return nil, fmt.Errorf("%s: part %d (%s): %s Nothing was started", DelegateTool, i+1, p.Title, errcode.Sentence(err))
		}
	}
	return specs, nil
}

// partEngine resolves a part's provider and model: here, a connected
// provider that is ready; on a host, a CLI found there, on a host that
// answers now (reached once per call, in reached).
func (s *Service) partEngine(ctx context.Context, engines []engine.Engine, parent conversation.Conversation, p part, reached map[string]bool) (spec, error) {
	if p.Cwd != "" && p.Host == "" {
		return spec{}, errors.New("cwd goes with host; here a part works in this chat's folder")
	}
	if p.Host != "" {
		var sp spec
		if err := s.onHost(ctx, parent, taskrun.Options{Provider: p.Provider, Model: p.Model, Host: p.Host, Cwd: p.Cwd}, &sp); err != nil {
			return spec{}, err
		}
		if !reached[p.Host] {
			if err := s.cfg.Hosts.Reach(ctx, p.Host); err != nil {
				return spec{}, err
			}
			reached[p.Host] = true
		}
		return sp, nil
	}
	e, err := engine.Pick(engines, p.Provider, parent.Provider, false)
	if err != nil {
		return spec{}, err
	}
	m, err := engine.ModelFor(e, p.Model, parent.Provider, parent.Model)
	if err != nil {
		return spec{}, err
	}
	return spec{engine: e, model: m}, nil
}

// sentence is err as the end of a sentence: its own words, ending in a
// full stop.
func sentence(err error) string {
	s := strings.TrimSuffix(errcode.Sentence(err), ".")
	return s + "."
}

// runParts starts every helper in one group and waits for them all; one
// that cannot start, or a stop, stops those started.
func (s *Service) runParts(ctx context.Context, parent conversation.Conversation, specs []spec, estimates []float64, jobCap *float64) ([]task.Task, error) {
	group := uuid.NewString()
	started := make([]task.Task, 0, len(specs))
	waits := make([]<-chan task.Task, 0, len(specs))
	for i, sp := range specs {
		sp.group, sp.estimate = group, estimates[i]
		if jobCap != nil {
			sp.jobCap = *jobCap
		}
		t, err := s.startWaiting(ctx, parent, sp)
		if err != nil {
			s.stopAll(started)
			return nil, fmt.Errorf("%s: could not start %q: %v; the parts already started were stopped", DelegateTool, sp.title, err)
		}
		started = append(started, t.Task)
		waits = append(waits, t.done)
	}
	ends := make([]task.Task, len(started))
	for i, w := range waits {
		select {
		case t := <-w:
			ends[i] = t
		case <-ctx.Done():
			s.stopAll(started)
			return nil, context.Cause(ctx)
		}
	}
	return ends, nil
}

// parseParts checks delegate's arguments at the edge: 1 to MaxParts parts,
// each with a title and instructions of bounded size, and nothing unknown;
// and the job's cap, if given.
func parseParts(args json.RawMessage) ([]part, *float64, error) {
	var a struct {
		Parts []json.RawMessage `json:"parts"`
		Cap   *float64          `json:"cap"`
	}
	if err := tool.Decode(DelegateTool, args, &a, "parts"); err != nil {
		return nil, nil, err
	}
	if n := len(a.Parts); n < 1 || n > MaxParts {
		return nil, nil, fmt.Errorf("%s takes 1 to %d parts, got %d; nothing was started", DelegateTool, MaxParts, n)
	}
	if a.Cap != nil && (*a.Cap < 0 || *a.Cap > 1e5 || math.IsNaN(*a.Cap)) {
		return nil, nil, fmt.Errorf("%s: cap must be between $0 (none) and $100,000; nothing was started", DelegateTool)
	}
	parts := make([]part, len(a.Parts))
	for i, raw := range a.Parts {
		if err := tool.Decode(fmt.Sprintf("%s: part %d", DelegateTool, i+1), raw, &parts[i], "title", "instructions"); err != nil {
			return nil, nil, fmt.Errorf("%w; nothing was started", err)
		}
		p := parts[i]
		if strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Instructions) == "" {
			return nil, nil, fmt.Errorf("%s: part %d needs a title and instructions; nothing was started", DelegateTool, i+1)
		}
		if err := taskrun.ValidateText(p.Instructions, p.Title); err != nil {
			return nil, nil, fmt.Errorf("%s: part %d: %s Nothing was started", DelegateTool, i+1, errcode.Sentence(err))
		}
		if len(p.Model) > taskrun.MaxTitle || len(p.Provider) > taskrun.MaxTitle {
			return nil, nil, fmt.Errorf("%s: part %d: model and provider must be under %d bytes; nothing was started", DelegateTool, i+1, taskrun.MaxTitle)
		}
	}
	return parts, a.Cap, nil
}

// waiting is a started task and where its finish arrives.
type waiting struct {
	task.Task
	done <-chan task.Task
}

// startWaiting starts a task with a waiter registered first, so its finish
// cannot be missed.
func (s *Service) startWaiting(ctx context.Context, parent conversation.Conversation, sp spec) (waiting, error) {
	id := store.NewID()
	done := s.cfg.Follow.WaitFor(id)
	t, err := s.startWithID(ctx, id, parent, sp)
	if err != nil {
		s.cfg.Follow.Forget(id)
		return waiting{}, err
	}
	if t.Status.Finished() { // failed at once (not ready, no worktree)
		s.cfg.Follow.Forget(id)
		ch := make(chan task.Task, 1)
		ch <- t
		return waiting{Task: t, done: ch}, nil
	}
	return waiting{Task: t, done: done}, nil
}

// stopAll stops the given helpers and waits (bounded) for them to end.
func (s *Service) stopAll(ts []task.Task) {
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.cfg.Tasks.StopTask(t.ID)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopWait):
	}
}

// merge writes the helpers' results as one block per part.
func merge(ts []task.Task) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## %s\n\n", t.Title)
		switch t.Status {
		case task.Done:
			b.WriteString(firstNonEmpty(t.Summary, "It finished without saying anything."))
		case task.Stopped, task.Interrupted:
			b.WriteString("Stopped before it finished.")
		default:
			b.WriteString("Didn't finish: " + firstNonEmpty(t.Error, "it gave no reason."))
		}
		if t.Note != "" {
			b.WriteString("\n\n" + t.Note)
		}
		if w := t.Worktree; w != nil && w.Kept {
			fmt.Fprintf(&b, "\n\nIts work is kept on branch `%s` (worktree %s) for the person to merge.", w.Branch, w.Path)
		}
	}
	return b.String()
}

// overBudget says why nothing more may be spent this month ("" if it may).
func (s *Service) overBudget() (string, error) {
	if s.cfg.Spending == nil {
		return "", nil
	}
	return s.cfg.Spending.Exceeded()
}

func refusal(why string, err error) error {
	if err != nil {
		return fmt.Errorf("could not read this month's spend: %w", err)
	}
	return errors.New("Refused: " + why + " Nothing was started.")
}

// estimate guesses what one part costs at least: the context a helper
// starts with (its instructions and the system prompt) and a modest reply.
const (
	systemTokens = 2000
	replyTokens  = 1000
)

// estimate guesses what each part costs to start (nothing on a local model).
func (s *Service) estimate(specs []spec) []float64 {
	out := make([]float64, len(specs))
	if s.cfg.Spending == nil {
		return out
	}
	prices := chat.Prices(s.cfg.Spending.Prices())
	for i, sp := range specs {
		if sp.engine.Info.Category == provider.LocalModel {
			continue
		}
		out[i] = prices.Cost(sp.model, provider.Usage{InputTokens: systemTokens + len(sp.text)/4, OutputTokens: replyTokens})
	}
	return out
}

// fanOutTooDear says why the parts alone would pass the chat's limit ("" if
// they would not).
func (s *Service) fanOutTooDear(parent conversation.Conversation, estimates []float64) string {
	if parent.Limit <= 0 {
		return ""
	}
	est := 0.0
	for _, e := range estimates {
		est += e
	}
	if left := parent.Limit - parent.Spent; est > left {
		return fmt.Sprintf("Refused: %s would cost about %s to start, and this chat has %s left of its %s limit. Nothing was started; raise the limit or use fewer parts.",
			quantity.Plural(len(estimates), "part", "parts"), budget.USD(est), budget.USD(max(left, 0)), budget.USD(parent.Limit))
	}
	return ""
}

// plural says n things ("1 part", "3 parts").
func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
