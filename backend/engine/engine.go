// Package engine says how the connected providers stand for taking work:
// which are ready, which can ask before they act (only those are handed a
// task or a helper part), and which model a part gets on each.
package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"conch/backend/provider"
)

// DefaultTimeout bounds asking one provider how it stands.
const DefaultTimeout = 5 * time.Second

// Engine is a provider as a task sees it now.
type Engine struct {
	ID   string
	Info provider.Info
}

// Name is what the person calls it ("Codex CLI"), else its id.
func (e Engine) Name() string {
	if e.Info.Name != "" {
		return e.Info.Name
	}
	return e.ID
}

// Lookup asks the connected providers how they stand.
type Lookup struct {
	Providers provider.Registry
	// Timeout bounds each provider's answer (0: DefaultTimeout).
	Timeout time.Duration
}

// All asks every connected provider, in parallel.
func (l Lookup) All(ctx context.Context) []Engine {
	ids := l.Providers.IDs()
	out := make([]Engine, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = Engine{ID: id, Info: l.Info(ctx, id)}
		}()
	}
	wg.Wait()
	return out
}

// Info is the provider's Info, or not ready when it is not connected or
// does not answer in time.
func (l Lookup) Info(ctx context.Context, id string) provider.Info {
	p, ok := l.Providers.Provider(id)
	if !ok {
		return provider.Info{ID: id, Reason: "it is not connected"}
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got := make(chan provider.Info, 1)
	go func() { got <- p.Info(ctx) }()
	select {
	case info := <-got:
		return info
	case <-ctx.Done():
		return provider.Info{ID: id, Reason: fmt.Sprintf("%s did not answer within %s", id, timeout)}
	}
}

// Pick resolves a provider named by id or name among engines; empty means
// the chat's own. Only a provider that is ready and can ask takes work (a
// not-ready one too when notReadyOK: the task then fails at once with its
// reason); the error lists the ones that can.
func Pick(engines []Engine, named, own string, notReadyOK bool) (Engine, error) {
	want := strings.TrimSpace(named)
	if want == "" {
		want = own
	}
	var usable []string
	var found *Engine
	for i, e := range engines {
		if e.Info.Ready && e.Info.CanAsk {
			usable = append(usable, fmt.Sprintf("%s (%s)", e.ID, e.Name()))
		}
		if strings.EqualFold(e.ID, want) || (e.Info.Name != "" && strings.EqualFold(e.Info.Name, want)) {
			found = &engines[i]
		}
	}
	who := "none is ready now"
	if len(usable) > 0 {
		sort.Strings(usable)
		who = strings.Join(usable, ", ")
	}
	switch {
	case found == nil:
		return Engine{}, fmt.Errorf("no connected provider is called %q. Providers that can take work: %s", want, who)
	case !found.Info.CanAsk:
		return Engine{}, fmt.Errorf("%s cannot ask before it acts, so it is never handed work. Providers that can take work: %s", found.Name(), who)
	case !found.Info.Ready && !notReadyOK:
		reason := found.Info.Reason
		if reason == "" {
			reason = "it gave no reason"
		}
		return Engine{}, fmt.Errorf("%s is not ready: %s. Providers that can take work: %s", found.Name(), reason, who)
	}
	return *found, nil
}

// ModelFor chooses a part's model: fast (the default: the provider's small
// model), same (the chat's model on its own provider, the provider's
// default elsewhere) or an id from the provider's list. The chat's model
// never goes to another provider.
func ModelFor(e Engine, choice string, chatProvider, chatModel string) (string, error) {
	models := e.Info.Models
	switch strings.TrimSpace(choice) {
	case "", "fast":
		if models.Fast != "" {
			return models.Fast, nil
		}
		return models.Default, nil
	case "same":
		if e.ID == chatProvider && chatModel != "" {
			return chatModel, nil
		}
		return models.Default, nil
	}
	for _, m := range models.List {
		if m == choice {
			return m, nil
		}
	}
	list := "it lists none"
	if len(models.List) > 0 {
		list = "it has " + strings.Join(models.List, ", ")
	}
	return "", fmt.Errorf("%s has no model %q (%s); use fast, same or one of its models", e.Name(), choice, list)
}

// CarryOver keeps a task's model choice on the provider that carries on
// after a limit: its fast model stays fast, a model the other also has
// stays, and anything else becomes the other's default.
func CarryOver(from provider.Info, to Engine, model string) string {
	m := to.Info.Models
	switch {
	case model != "" && model == from.Models.Fast && m.Fast != "":
		return m.Fast
	case model != "":
		for _, id := range m.List {
			if id == model {
				return model
			}
		}
	}
	return m.Default
}
