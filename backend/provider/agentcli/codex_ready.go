package agentcli

import (
	"context"
	"encoding/json"
	"fmt"

	"conch/backend/provider"
)

// probe asks an app-server whether codex can run.
func (c *Codex) probe(ctx context.Context, bin string) (readiness, bool) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	s := &codexProbe{cfg: c.cfg}
	ch, err := launchRPC(ctx, c.cfg, "codex", bin, []string{"app-server"}, "", provider.Request{}, func(emitter) rpcSession { return s })
	if err != nil {
		return readiness{}, false
	}
	for range ch {
	}
	return s.got, s.ok
}

// codexProbe is the session of a readiness probe.
type codexProbe struct {
	cfg Config
	got readiness
	ok  bool
}

// drive asks whether codex's default provider can run (its key set, or
// logged in) and which models it offers.
func (s *codexProbe) drive(ctx context.Context, r *rpcRun) (string, error) {
	if err := codexHello(ctx, r); err != nil {
		return "", err
	}
	st, defaultProvider, err := s.auth(ctx, r)
	if err != nil {
		return "", err
	}
	st.model, st.models = codexModels(ctx, r, defaultProvider)
	s.got, s.ok = st, true
	return "", nil
}

// auth reads whether codex's default provider has what it needs: the
// variable its key is read from, or else a login. It returns the
// provider's id too.
func (s *codexProbe) auth(ctx context.Context, r *rpcRun) (readiness, string, error) {
	var providers struct {
		Data []struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Settings struct {
				Type string `json:"type"`
				Auth struct {
					Mode   string `json:"mode"`
					EnvKey string `json:"envKey"`
				} `json:"auth"`
			} `json:"settings"`
		} `json:"data"`
		Default string `json:"defaultProviderId"`
	}
	if err := r.call(ctx, "modelProvider/list", map[string]any{}, &providers); err != nil {
		return readiness{}, "", err
	}
	st := readiness{ready: true}
	for _, p := range providers.Data {
		if p.ID != providers.Default {
			continue
		}
		if p.Settings.Auth.Mode == "environmentVariable" && p.Settings.Auth.EnvKey != "" {
			if v, _ := s.cfg.getenv(p.Settings.Auth.EnvKey); v == "" {
				// Codex's own words when a turn runs without it.
				st = readiness{reason: fmt.Sprintf("Missing environment variable: `%s`.", p.Settings.Auth.EnvKey)}
			}
			break
		}
		var acct struct {
			Account       json.RawMessage `json:"account"`
			RequiresLogin bool            `json:"requiresOpenaiAuth"`
		}
		if err := r.call(ctx, "account/read", map[string]any{}, &acct); err != nil {
			return readiness{}, "", err
		}
		if acct.RequiresLogin && (len(acct.Account) == 0 || string(acct.Account) == "null") {
			st = readiness{reason: "Not logged in · run codex login"}
		}
	}
	return st, providers.Default, nil
}

// codexModels reads the model codex runs when none is named, its
// config's, else its catalog's default, and the models it offers. A
// custom provider (not defaultProvider "openai") serves only what its
// config names; the catalog is OpenAI's.
func codexModels(ctx context.Context, r *rpcRun, defaultProvider string) (model string, offered []string) {
	var conf struct {
		Config struct {
			Model *string `json:"model"`
		} `json:"config"`
	}
	if err := r.call(ctx, "config/read", map[string]any{}, &conf); err == nil && conf.Config.Model != nil && *conf.Config.Model != "" {
		model = *conf.Config.Model
		if defaultProvider != "openai" {
			offered = []string{model}
		}
	}
	if len(offered) > 0 {
		return model, offered
	}
	var list struct {
		Data []struct {
			Model     string `json:"model"`
			IsDefault bool   `json:"isDefault"`
			Hidden    bool   `json:"hidden"`
		} `json:"data"`
	}
	if err := r.call(ctx, "model/list", map[string]any{}, &list); err == nil {
		for _, m := range list.Data {
			if m.Hidden {
				continue
			}
			offered = append(offered, m.Model)
			if m.IsDefault && model == "" {
				model = m.Model
			}
		}
	}
	return model, offered
}

func (s *codexProbe) notify(string, json.RawMessage) error { return nil }

func (s *codexProbe) request(context.Context, string, json.RawMessage) (any, *rpcError) {
	return nil, &rpcError{Code: rpcNoMethod, Message: "Conch was only asking whether Codex is ready"}
}

func (s *codexProbe) failure(exit exitStatus) error { return exit.failure("codex") }
