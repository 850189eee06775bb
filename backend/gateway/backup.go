package gateway

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"conch/backend/errcode"
	"conch/backend/service"
)

// backupWriteTimeout bounds each write of a backup to its client: the
// whole download may take as long as it takes, a client that stops
// reading may not hold it forever.
const backupWriteTimeout = time.Minute

// backup serves GET /api/backup: a live backup of the store as a download
// (conch-backup-<time>.db, a bbolt database), or with ?output=1 a tar that
// holds the output logs too (.tar). It is taken while tasks run. A backup
// that breaks off after its first byte aborts the response, so no client
// takes a cut-off file for a whole one.
func (g *Gateway) backup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	var withOutput bool
	switch r.URL.Query().Get("output") {
	case "", "0", "false":
	case "1", "true":
		withOutput = true
	default:
		writeError(w, errcode.Invalid, "output must be 1 (a tar with the output logs) or 0 (the store alone).")
		return
	}
	rc := http.NewResponseController(w)
	err := service.WriteBackup(g.api, withOutput, func(b service.BackupStream) (io.Writer, error) {
		h := w.Header()
		h.Set("Content-Type", b.ContentType)
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": b.Name}))
		h.Set("Cache-Control", "no-store")
		if b.Size >= 0 {
			h.Set("Content-Length", strconv.FormatInt(b.Size, 10))
		}
		w.WriteHeader(http.StatusOK)
		return writerFunc(func(p []byte) (int, error) {
			_ = rc.SetWriteDeadline(time.Now().Add(backupWriteTimeout))
			return w.Write(p)
		}), nil
	})
	if errors.Is(err, service.ErrBackupBrokeOff) {
		g.cfg.Log.Warn("backup broke off", "err", err)
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		writeErr(w, err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
