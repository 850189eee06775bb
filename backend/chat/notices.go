package chat

import (
	"conch/backend/conversation"
	"conch/backend/provider"
	"errors"
	"fmt"
	"time"
)

func name(info provider.Info, id string) string {
	if info.Name != "" {
		return info.Name
	}
	return id
}

// limitNotice is what the chat records of a usage limit in err, or nil
// when err is not one.
func limitNotice(id, who string, err error) *conversation.LimitNotice {
	if !errors.Is(err, provider.ErrLimit) {
		return nil
	}
	n := &conversation.LimitNotice{Provider: id, Name: who}
	var lim *provider.LimitError
	if errors.As(err, &lim) {
		n.Message = lim.Message
		if !lim.Until.IsZero() {
			u := lim.Until.UTC()
			n.Until = &u
		}
	}
	return n
}

// providerNotice says why a provider call failed, in the person's words.
func providerNotice(who string, err error) string {
	var lim *provider.LimitError
	switch {
	case errors.As(err, &lim) && !lim.Until.IsZero():
		return fmt.Sprintf("%s reached its usage limit until %s: %s", who, lim.Until.UTC().Format(time.RFC3339), lim.Message)
	case errors.As(err, &lim):
		return fmt.Sprintf("%s reached its usage limit: %s", who, lim.Message)
	case errors.Is(err, provider.ErrLimit):
		return fmt.Sprintf("%s reached its usage limit: %v", who, err)
	case errors.Is(err, provider.ErrOverload):
		return fmt.Sprintf("%s is overloaded; try again shortly. (%v)", who, err)
	case errors.Is(err, provider.ErrAuth):
		return fmt.Sprintf("%s refused the credentials: %v", who, err)
	case errors.Is(err, provider.ErrNotReady):
		return fmt.Sprintf("%s is not ready: %v", who, err)
	}
	return fmt.Sprintf("%s failed: %v", who, err)
}
