package gateway

import (
	"net/http"
	"strconv"
	"time"

	"conch/backend/errcode"
)

// followCheck is how often a followed output looks whether its task has
// ended with every byte sent; followWrite bounds one write to the client.
const (
	followCheck = 200 * time.Millisecond
	followWrite = 30 * time.Second
)

// followOutput streams a task's log from offset as it is written (each
// append is sent as it lands, not at the next outputBytes), and ends once
// the task has ended and every byte of its log is sent, or the task is
// deleted, or the client goes. X-Offset says where the bytes start.
func (g *Gateway) followOutput(w http.ResponseWriter, r *http.Request, id string, offset int64) {
	if g.cfg.Logs == nil {
		writeError(w, errcode.NotFound, "Following output is not served here.")
		return
	}
	if _, err := g.api.GetTask(id); err != nil {
		writeErr(w, err)
		return
	}
	ctx := r.Context()
	ch, err := g.cfg.Logs.Follow(ctx, id, offset)
	if err != nil {
		writeErr(w, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Offset", strconv.FormatInt(offset, 10))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	tick := time.NewTicker(followCheck)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-ch:
			if !ok {
				return
			}
			_ = rc.SetWriteDeadline(time.Now().Add(followWrite))
			if _, err := w.Write(b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			offset += int64(len(b))
		case <-tick.C:
			t, err := g.api.GetTask(id)
			if err != nil || t.Status.Finished() && offset >= t.OutputBytes {
				return
			}
		}
	}
}
