package handoff

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"conch/backend/conversation"
	"conch/backend/engine"
	"conch/backend/provider"
	"conch/backend/taskrun"
)

// Hosts are the other computers work can be sent to (SPEC §6).
type Hosts interface {
	// Check says why tasks cannot be sent to host (nil: they can), in a
	// sentence naming the hosts that can take work.
	Check(host string) error
	// Agents are the coding-agent CLIs found on host when it was last
	// tested, as engines (their ids the providers' kinds).
	Agents(host string) ([]engine.Engine, error)
	// Reach connects to host, saying why it could not.
	Reach(ctx context.Context, host string) error
	// Allowed are the API-model providers the person allowed to carry
	// tasks to host (its record's models).
	Allowed(host string) ([]string, error)
}

// onHost makes sp a task of a chat's that runs on the host o names: on a
// coding-agent CLI found there (the one named, else the chat's own), in
// a folder there ("~" unless o names one). Its chat here keeps its
// powers (mode, taint, limit); the host is told them with the task.
func (s *Service) onHost(ctx context.Context, parent conversation.Conversation, o taskrun.Options, sp *spec) error {
	if s.cfg.Hosts == nil {
		return fmt.Errorf("%w: this Conch does not send work to other computers", ErrInvalid)
	}
	if err := s.cfg.Hosts.Check(o.Host); err != nil {
		return err
	}
	agents, err := s.cfg.Hosts.Agents(o.Host)
	if err != nil {
		return err
	}
	named := strings.TrimSpace(o.Provider)
	if named == "" {
		named = parent.Provider
	}
	var found *engine.Engine
	var there []string
	for i, e := range agents {
		there = append(there, fmt.Sprintf("%s (%s)", e.ID, e.Name()))
		if strings.EqualFold(e.ID, named) || strings.EqualFold(e.Info.Name, named) {
			found = &agents[i]
		}
	}
	sort.Strings(there)
	if found == nil {
		lent, err := s.lendable(ctx, o.Host, named)
		if err != nil {
			return err
		}
		if lent == nil {
			which := "none was found there at its last test (Settings → Hosts → Test)"
			if len(there) > 0 {
				which = "found there: " + strings.Join(there, ", ")
			}
			return fmt.Errorf("%w: a chat's task on %s runs on a coding-agent CLI installed there, or an API model you allowed there, not %q; %s", ErrInvalid, o.Host, named, which)
		}
		found = lent
	}
	sp.engine, sp.host, sp.cwd = *found, o.Host, o.Cwd
	sp.model = o.Model
	if sp.model == "" && found.ID == parent.Provider {
		sp.model = parent.Model
	}
	return nil
}

// checkHostCwd refuses a folder that names this computer's for a task
// that stays here.
func checkHostCwd(parent conversation.Conversation, o taskrun.Options) error {
	if o.Host == "" && o.Cwd != "" && filepath.Clean(o.Cwd) != parent.Cwd {
		return fmt.Errorf("%w: a chat's task works in the chat's folder (%s)", ErrInvalid, parent.Cwd)
	}
	return nil
}

// toolSpec resolves the provider (and host) of a task a tool call starts:
// here, a connected provider that is ready; on a host, a CLI found there,
// on a host that answers now (a tool's task never waits on one that is
// down: the model is told, and can pick another).
func (s *Service) toolSpec(ctx context.Context, parent conversation.Conversation, provider, model, host, cwd string) (spec, error) {
	if host == "" {
		return s.specFor(ctx, parent, provider, model, false)
	}
	var sp spec
	if err := s.onHost(ctx, parent, taskrun.Options{Provider: provider, Model: model, Host: host, Cwd: cwd}, &sp); err != nil {
		return spec{}, err
	}
	if err := s.cfg.Hosts.Reach(ctx, host); err != nil {
		return spec{}, err
	}
	return sp, nil
}

// lendable is the API-model provider named, connected here and ready,
// that the person allowed on host (its key goes there with each run, in
// memory); nil when named is no API model here. One not allowed there is
// refused, saying where to allow it.
func (s *Service) lendable(ctx context.Context, host, named string) (*engine.Engine, error) {
	for _, e := range s.cfg.Engines.All(ctx) {
		if !strings.EqualFold(e.ID, named) && !strings.EqualFold(e.Info.Name, named) {
			continue
		}
		if c := e.Info.Category; c != provider.ChatOnly && c != provider.LocalModel {
			return nil, nil
		}
		allowed, err := s.cfg.Hosts.Allowed(host)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(allowed, e.ID) {
			return nil, fmt.Errorf("%w: %s may work on %s only with your OK, given there: Settings → Hosts → %s → Change (its key then goes there for each run, in memory only)", ErrInvalid, e.Name(), host, host)
		}
		if !e.Info.Ready {
			return nil, fmt.Errorf("%w: %s is not ready: %s", ErrInvalid, e.Name(), e.Info.Reason)
		}
		return &e, nil
	}
	return nil, nil
}
