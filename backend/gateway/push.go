package gateway

import (
	"net/http"

	"conch/backend/errcode"
	"conch/backend/push"
)

// pushKey answers the VAPID public key a page subscribes with.
func (g *Gateway) pushKey(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	k, err := g.api.PushKey()
	reply(w, http.StatusOK, k, err)
}

// pushSubscriptions adds (POST, a PushSubscription's JSON: 201, or 200
// when the endpoint was kept already) or removes (DELETE {endpoint}: 204)
// a browser's push subscription.
func (g *Gateway) pushSubscriptions(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		var sub push.Subscription
		if !decode(w, r, &sub) {
			return
		}
		if !sub.AddedAt.IsZero() {
			writeError(w, errcode.Invalid, "addedAt is set by Conch; send the browser's PushSubscription as it is.")
			return
		}
		saved, err := g.api.SubscribePush(sub)
		status := http.StatusOK
		if saved.Created {
			status = http.StatusCreated
		}
		reply(w, status, saved.Subscription, err)
	case http.MethodDelete:
		var req struct {
			Endpoint string `json:"endpoint"`
		}
		if !decode(w, r, &req) {
			return
		}
		if req.Endpoint == "" {
			writeError(w, errcode.Invalid, "Send the subscription's endpoint: {\"endpoint\": \"https://…\"}.")
			return
		}
		if err := g.api.UnsubscribePush(req.Endpoint); err != nil {
			writeErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "POST, DELETE")
	}
}
