package registry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zalando/go-keyring"

	"conch/backend/event"
	"conch/backend/provider/shell"
	"conch/backend/store"
)

// Bounds a configuration is checked against.
const (
	// MaxKeyLen is the longest key accepted; real ones are well under it.
	MaxKeyLen = 1024
	maxName   = 80
	maxModel  = 200
)

// validID is what a provider id may look like: it is a URL path segment and
// a keyring user name.
var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// PutRequest connects a provider or changes one (PUT /api/providers/:id).
type PutRequest struct {
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	BaseURL string `json:"baseUrl,omitempty"`
	// APIKey replaces the key when given; "" forgets it; left out keeps it.
	APIKey    *string `json:"apiKey,omitempty"`
	Model     string  `json:"model,omitempty"`
	FastModel string  `json:"fastModel,omitempty"`
	// Preset (openai kind only) fills in the base URL and models of
	// ollama, lmstudio, openrouter or openai; an id naming one of them
	// implies it.
	Preset string `json:"preset,omitempty"`
}

// validate checks req for id and returns it tidied (trimmed, preset
// implied), or an error matching ErrInvalid.
func validate(id string, req PutRequest) (PutRequest, error) {
	bad := func(format string, a ...any) (PutRequest, error) {
		return req, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	req.Kind = strings.TrimSpace(req.Kind)
	req.Name = strings.TrimSpace(req.Name)
	req.BaseURL = strings.TrimSpace(req.BaseURL)
	req.Model = strings.TrimSpace(req.Model)
	req.FastModel = strings.TrimSpace(req.FastModel)
	req.Preset = strings.TrimSpace(req.Preset)
	if !validID.MatchString(id) {
		return bad("a provider id is 1 to 64 lower-case letters, digits, dots, dashes or underscores, starting with a letter or digit")
	}
	if id == shell.ChatID {
		return bad("%s is the built-in shell; it has nothing to configure", id)
	}
	if !slices.Contains(kinds, req.Kind) {
		return bad("kind must be one of %s", strings.Join(kinds, ", "))
	}
	api := req.Kind == KindOpenAI || req.Kind == KindAnthropic
	if req.Preset == "" && req.Kind == KindOpenAI {
		if _, ok := presets[id]; ok {
			req.Preset = id
		}
	}
	if req.Preset != "" {
		if _, ok := presets[req.Preset]; !ok || req.Kind != KindOpenAI {
			return bad("preset must be one of ollama, lmstudio, openrouter, openai, with kind openai")
		}
	}
	if utf8.RuneCountInString(req.Name) > maxName || strings.IndexFunc(req.Name, unicode.IsControl) >= 0 {
		return bad("a name is at most %d characters, on one line", maxName)
	}
	for _, m := range []string{req.Model, req.FastModel} {
		if len(m) > maxModel || strings.IndexFunc(m, unicode.IsSpace) >= 0 || strings.IndexFunc(m, unicode.IsControl) >= 0 {
			return bad("a model name is at most %d characters, without spaces", maxModel)
		}
	}
	if req.BaseURL != "" {
		if !api {
			return bad("a %s provider takes no base URL", req.Kind)
		}
		u, err := url.Parse(req.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return bad("baseUrl must be an absolute http or https URL such as http://127.0.0.1:11434/v1, without credentials, query or fragment")
		}
	} else if req.Kind == KindOpenAI && req.Preset == "" {
		return bad("an openai provider needs a baseUrl or a preset")
	}
	if req.APIKey != nil {
		k := strings.TrimSpace(*req.APIKey)
		if k != "" && !api {
			return bad("a %s provider takes no API key: the CLI signs in on its own", req.Kind)
		}
		if len(k) > MaxKeyLen || strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return bad("an API key is at most %d characters, without spaces", MaxKeyLen)
		}
		req.APIKey = &k
	}
	return req, nil
}

// Put connects the provider id, or changes it, and describes it as List
// would. A key given is kept in the OS keyring, or in the store when there
// is none; a key is never written to the provider's record. A refused
// request fails with an error matching ErrInvalid and changes nothing.
func (r *Registry) Put(ctx context.Context, id string, req PutRequest) (Listing, error) {
	req, err := validate(id, req)
	if err != nil {
		return Listing{}, err
	}
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.RLock()
	old, existed := r.records[id]
	r.mu.RUnlock()
	now := r.cfg.Now().UTC()
	rec := store.ProviderConfig{
		ID: id, Kind: req.Kind, Name: req.Name, BaseURL: req.BaseURL, Model: req.Model,
		FastModel: req.FastModel, Preset: req.Preset, CreatedAt: now, UpdatedAt: now,
	}
	if existed {
		rec.CreatedAt = old.CreatedAt
		rec.KeyStorage = old.KeyStorage
	}
	switch {
	case req.APIKey != nil && *req.APIKey != "":
		storage, err := r.saveKey(id, *req.APIKey)
		if err != nil {
			return Listing{}, err
		}
		rec.KeyStorage = storage
	case req.APIKey != nil || (rec.Kind != KindOpenAI && rec.Kind != KindAnthropic):
		if err := r.forgetKey(id, rec.KeyStorage); err != nil {
			return Listing{}, err
		}
		rec.KeyStorage = ""
	}
	if err := r.cfg.Store.PutProviderConfig(rec); err != nil {
		return Listing{}, fmt.Errorf("connect provider %s: %w", id, err)
	}
	e := r.build(rec, r.readKey(rec))
	r.mu.Lock()
	r.records[id] = rec
	r.configured[id] = e
	r.mu.Unlock()
	r.changed(id)
	return r.describe(ctx, e), nil
}

// changed tells the bus that provider id was connected, changed or
// removed.
func (r *Registry) changed(id string) {
	if r.cfg.Bus != nil {
		r.cfg.Bus.Publish(event.Event{Type: event.ProvidersChanged, ID: id})
	}
}

// saveKey keeps key in the keyring, or in the store when the keyring does
// not answer (or refuses it), and removes any copy from the other place.
func (r *Registry) saveKey(id, key string) (string, error) {
	kr := r.liveKeyring()
	if kr != nil {
		err := kr.Set(id, key)
		r.mu.Lock()
		r.locked = errors.Is(err, ErrLocked)
		r.mu.Unlock()
		if err == nil {
			if err := r.cfg.Store.DeleteProviderKey(id); err != nil {
				return "", fmt.Errorf("save key of provider %s: %w", id, err)
			}
			return InKeyring, nil
		}
		r.cfg.Log.Warn("the keyring refused a provider key; keeping it in the store", "provider", id, "err", err)
	}
	if err := r.cfg.Store.PutProviderKey(id, key); err != nil {
		return "", fmt.Errorf("save key of provider %s: %w", id, err)
	}
	if kr != nil {
		_ = kr.Delete(id)
	}
	return InStore, nil
}

// liveKeyring is the keyring to use now, nil for none. One found locked is
// asked again (it answers at once either way): the person told to unlock
// it and save the key again must not need to restart Conch too. Called
// with ops held, which guards every write of r.keyring.
func (r *Registry) liveKeyring() Keyring {
	r.mu.RLock()
	kr, locked := r.keyring, r.locked
	r.mu.RUnlock()
	if kr != nil || !locked {
		return kr
	}
	err := usable(r.cfg.Keyring)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.locked = errors.Is(err, ErrLocked)
	if err != nil {
		return nil
	}
	r.keyring, r.keyringErr = r.cfg.Keyring, nil
	return r.keyring
}

// forgetKey removes id's key from both places; no key is no error. A
// keyring that cannot forget it fails the call only when the record says
// the key is there (storage): otherwise the keyring holds at most a copy
// that is no longer used, and a locked keyring must not stop the rest.
func (r *Registry) forgetKey(id, storage string) error {
	kr := r.liveKeyring()
	if kr == nil && storage == InKeyring && r.keyLocked() {
		return fmt.Errorf("%w: the key of provider %s is in the system keyring, which is locked; unlock it and try again", ErrLocked, id)
	}
	if kr != nil {
		if err := kr.Delete(id); err != nil && !errors.Is(err, keyring.ErrNotFound) {
			switch {
			case storage == InKeyring && errors.Is(err, ErrLocked):
				return fmt.Errorf("%w: the key of provider %s is in the system keyring, which is locked; unlock it and try again", ErrLocked, id)
			case storage == InKeyring:
				return fmt.Errorf("forget key of provider %s: %w", id, err)
			}
			r.cfg.Log.Warn("could not remove an unused key from the keyring", "provider", id, "err", err)
		}
	}
	if err := r.cfg.Store.DeleteProviderKey(id); err != nil {
		return fmt.Errorf("forget key of provider %s: %w", id, err)
	}
	return nil
}

// Delete removes a configured provider and its key. A provider Conch found
// on its own with the same id takes its place again. Deleting a found one
// fails with ErrConflict (it would be found again at the next start), an
// unknown id with ErrNotFound.
func (r *Registry) Delete(id string) error {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.RLock()
	rec, configured := r.records[id]
	found, isFound := r.found[id]
	r.mu.RUnlock()
	if !configured {
		if isFound {
			return fmt.Errorf("%w: %s", ErrConflict, whyFound(found))
		}
		return fmt.Errorf("provider %s: %w", id, ErrNotFound)
	}
	// The key first: a keyring that keeps it (locked) leaves the provider
	// as it was, not a record gone with its key left behind.
	if err := r.forgetKey(id, rec.KeyStorage); err != nil {
		return err
	}
	if err := r.cfg.Store.DeleteProviderConfig(id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete provider %s: %w", id, err)
	}
	r.mu.Lock()
	delete(r.records, id)
	delete(r.configured, id)
	r.mu.Unlock()
	r.changed(id)
	return nil
}

// whyFound says where a found provider comes from and how to remove it.
func whyFound(e entry) string {
	name := e.fallback.Name
	switch e.source {
	case FromEnv:
		return fmt.Sprintf("%s comes from the %s environment variable; unset it and restart Conch to remove it", name, envVars[e.fallback.ID])
	case Detected:
		return fmt.Sprintf("%s was found running on this computer; it cannot be deleted, only configured", name)
	case BuiltIn:
		return fmt.Sprintf("%s is built in; it cannot be deleted", name)
	default:
		return fmt.Sprintf("%s was found on PATH; it cannot be deleted, only configured", name)
	}
}
