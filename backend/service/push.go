package service

import (
	"time"

	"conch/backend/push"
)

// PushKey is what a page subscribes to Web Push with: the VAPID public key
// (applicationServerKey), URL-safe base64 of the uncompressed P-256 point.
type PushKey struct {
	PublicKey string `json:"publicKey"`
}

// PushSubscribed is the subscription as kept, and whether it is new
// (201) or replaced one of the same endpoint (200).
type PushSubscribed struct {
	Subscription push.Subscription `json:"subscription"`
	Created      bool              `json:"created"`
}

// PushKey returns the VAPID public key a browser subscribes with.
func (s *Service) PushKey() (PushKey, error) {
	if s.cfg.PushKeys == nil {
		return PushKey{}, errUnavailable("Web Push notifications")
	}
	return PushKey{PublicKey: s.cfg.PushKeys.Public()}, nil
}

// SubscribePush keeps a browser's push subscription (PushSubscription's
// JSON); the same endpoint again replaces its keys. A task's finish or
// question is pushed to it from then on.
func (s *Service) SubscribePush(sub push.Subscription) (PushSubscribed, error) {
	if s.cfg.PushBook == nil {
		return PushSubscribed{}, errUnavailable("Web Push notifications")
	}
	saved, created, err := s.cfg.PushBook.Add(sub, time.Now())
	return PushSubscribed{Subscription: saved, Created: created}, err
}

// UnsubscribePush forgets the subscription of endpoint (not_found when
// none is kept).
func (s *Service) UnsubscribePush(endpoint string) error {
	if s.cfg.PushBook == nil {
		return errUnavailable("Web Push notifications")
	}
	return s.cfg.PushBook.Remove(endpoint)
}
