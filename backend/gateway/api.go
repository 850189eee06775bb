package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"conch/backend/chat"
	"conch/backend/provider/registry"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// maxOutputRead bounds one read of a task's output.
const maxOutputRead = 1 << 20

func (g *Gateway) routes() {
	g.mux.HandleFunc("/api/events", g.events)
	g.mux.HandleFunc("/api/events/ticket", g.ticket)
	g.mux.HandleFunc("/api/tasks", g.tasks)
	g.mux.HandleFunc("/api/preferences", g.preferences)
	g.mux.HandleFunc("/api/doctor", g.doctor)
	g.mux.HandleFunc("/api/approvals", g.approvals)
	g.mux.HandleFunc("/api/tasks/", g.taskByID)
	g.mux.HandleFunc("/api/conversations", g.conversations)
	g.mux.HandleFunc("/api/conversations/", g.conversationByID)
	g.mux.HandleFunc("/api/providers", g.providers)
	g.mux.HandleFunc("/api/providers/", g.providerByID)
	g.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "No such API route: "+r.URL.Path)
	})
	g.mux.HandleFunc("/", g.static)
}

func (g *Gateway) tasks(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		tasks, concurrent := g.cfg.Tasks.List()
		writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks, "concurrent": concurrent})
	case http.MethodPost:
		var req taskrun.CreateRequest
		if !decode(w, r, &req) {
			return
		}
		var t task.Task
		var err error
		if req.ConversationID != "" && g.cfg.Handoff != nil {
			t, err = g.cfg.Handoff.Background(r.Context(), req)
		} else {
			t, err = g.cfg.Tasks.Create(req)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, t)
	default:
		methodNotAllowed(w, "GET, POST")
	}
}

// preferences reads (GET) and changes (PATCH: only the fields sent) the
// person's preferences.
func (g *Gateway) preferences(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Prefs == nil {
		writeError(w, http.StatusNotFound, "not_found", "Preferences are not available here.")
		return
	}
	cur, err := g.cfg.Prefs.Preferences()
	if err != nil {
		writeErr(w, err)
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, cur)
	case http.MethodPatch:
		// Decoding onto the current preferences changes only what was sent.
		if !decode(w, r, &cur) {
			return
		}
		if err := cur.Validate(); err != nil {
			writeError(w, http.StatusBadRequest, "invalid", sentence(err))
			return
		}
		saved, err := g.cfg.Prefs.SetPreferences(cur)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, saved)
	default:
		methodNotAllowed(w, "GET, PATCH")
	}
}

// approvals lists every pending question, oldest first; answer one with
// POST /api/tasks/:id/answer.
func (g *Gateway) approvals(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": g.cfg.Tasks.Approvals()})
}

func (g *Gateway) doctor(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	if g.cfg.Doctor == nil {
		writeError(w, http.StatusNotFound, "not_found", "The doctor is not available here.")
		return
	}
	writeJSON(w, http.StatusOK, g.cfg.Doctor())
}

// taskByID serves /api/tasks/:id and /api/tasks/:id/<action>.
func (g *Gateway) taskByID(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/tasks/")
	id, action, _ := strings.Cut(rest, "/")
	if id == "" || strings.Contains(action, "/") {
		writeError(w, http.StatusNotFound, "not_found", "No such API route: "+r.URL.Path)
		return
	}
	route := map[string]struct {
		method string
		serve  func(http.ResponseWriter, *http.Request, string)
	}{
		"":       {http.MethodGet, g.getTask},
		"output": {http.MethodGet, g.output},
		"stop":   {http.MethodPost, g.stop},
		"retry":  {http.MethodPost, g.retry},
		"answer": {http.MethodPost, g.answer},
		// Removing a kept worktree; with work in it only with confirm.
		"remove-worktree": {http.MethodPost, g.removeWorktree},
	}
	if action == "" && r.Method == http.MethodDelete {
		g.deleteTask(w, r, id)
		return
	}
	h, ok := route[action]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "No such API route: "+r.URL.Path)
		return
	}
	if r.Method != h.method {
		allow := h.method
		if action == "" {
			allow += ", DELETE"
		}
		methodNotAllowed(w, allow)
		return
	}
	h.serve(w, r, id)
}

func (g *Gateway) getTask(w http.ResponseWriter, _ *http.Request, id string) {
	t, err := g.cfg.Tasks.Get(id)
	reply(w, t, err)
}

func (g *Gateway) stop(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	t, err := g.cfg.Tasks.StopTask(id)
	reply(w, t, err)
}

func (g *Gateway) retry(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	t, err := g.cfg.Tasks.Retry(id)
	reply(w, t, err)
}

func (g *Gateway) removeWorktree(w http.ResponseWriter, r *http.Request, id string) {
	if g.cfg.Handoff == nil {
		writeError(w, http.StatusNotFound, "not_found", "Worktrees are not available here.")
		return
	}
	var req struct {
		Confirm bool `json:"confirm"`
	}
	if !decode(w, r, &req) {
		return
	}
	t, err := g.cfg.Handoff.RemoveWorktree(r.Context(), id, req.Confirm)
	reply(w, t, err)
}

func (g *Gateway) deleteTask(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	if err := g.cfg.Tasks.Delete(id); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// AnswerRequest answers a task's pending question.
type AnswerRequest struct {
	AskID string `json:"askId"`
	Allow *bool  `json:"allow"`
}

func (g *Gateway) answer(w http.ResponseWriter, r *http.Request, id string) {
	var req AnswerRequest
	if !decode(w, r, &req) {
		return
	}
	if req.AskID == "" || req.Allow == nil {
		writeError(w, http.StatusBadRequest, "invalid", "Send {\"askId\": \"…\", \"allow\": true|false}.")
		return
	}
	t, err := g.cfg.Tasks.Answer(id, req.AskID, *req.Allow)
	reply(w, t, err)
}

func (g *Gateway) output(w http.ResponseWriter, r *http.Request, id string) {
	if _, err := g.cfg.Tasks.Get(id); err != nil {
		writeErr(w, err)
		return
	}
	q := r.URL.Query()
	offset, err := intParam(q.Get("offset"), 0)
	if err != nil || offset < 0 {
		writeError(w, http.StatusBadRequest, "invalid", "offset must be a whole number of bytes, 0 or more.")
		return
	}
	max, err := intParam(q.Get("max"), maxOutputRead)
	if err != nil || max <= 0 {
		writeError(w, http.StatusBadRequest, "invalid", "max must be a whole number of bytes, 1 or more.")
		return
	}
	if max > maxOutputRead {
		max = maxOutputRead
	}
	data, next, err := g.cfg.Logs.ReadAt(id, offset, int(max))
	if errors.Is(err, fs.ErrNotExist) {
		data, next, err = nil, 0, nil // nothing written yet: an offset past it is clamped to 0
	}
	if err != nil {
		g.cfg.Log.Error("read output", "task", id, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "Could not read this task's output.")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Next-Offset", strconv.FormatInt(next, 10))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func intParam(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// static serves the built frontend, falling back to index.html for routes
// the single-page app handles itself.
func (g *Gateway) static(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET")
		return
	}
	if g.cfg.Assets == nil {
		writeError(w, http.StatusNotFound, "not_found", "This build has no frontend; run `make build`.")
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "" {
		name = "index.html"
	}
	if fi, err := fs.Stat(g.cfg.Assets, name); err != nil || fi.IsDir() {
		name = "index.html"
	}
	b, err := fs.ReadFile(g.cfg.Assets, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", "The frontend is not built; run `make build`.")
		return
	}
	if ct := mime.TypeByExtension(extOf(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if name == "index.html" {
		w.Header().Set("Cache-Control", "no-store")
	}
	http.ServeContent(w, r, name, fsModTime, bytes.NewReader(b))
}

func extOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

// decode reads a JSON body into v, answering the request itself when the body
// is not acceptable.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "not_json", "Send the body as JSON with Content-Type: application/json.")
		return false
	}
	body := http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeDecodeError(w, err)
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeDecodeError(w, err)
			return false
		}
		writeError(w, http.StatusBadRequest, "bad_json", "The body holds more than one JSON value.")
		return false
	}
	return true
}

func writeDecodeError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "The body is larger than 1 MiB.")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		writeError(w, http.StatusBadRequest, "unknown_field", "Unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+".")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "bad_json", "The body is not valid JSON.")
	case errors.As(err, &typ):
		writeError(w, http.StatusBadRequest, "bad_json", "Field "+typ.Field+" has the wrong type.")
	default:
		writeError(w, http.StatusBadRequest, "bad_json", "The body could not be read as JSON.")
	}
}

// emptyBody refuses a body on actions that take none (a client that sends
// one expects it to mean something).
func emptyBody(w http.ResponseWriter, r *http.Request) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeDecodeError(w, err)
		return false
	}
	if s := strings.TrimSpace(string(b)); s != "" && s != "{}" && s != "null" {
		writeError(w, http.StatusBadRequest, "invalid", "This action takes no body.")
		return false
	}
	return true
}

func reply(w http.ResponseWriter, t task.Task, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// writeErr answers with the status and body ErrorFor gives err.
func writeErr(w http.ResponseWriter, err error) {
	status, body := ErrorFor(err)
	writeJSON(w, status, body)
}

// ErrorFor maps an error from the engine to its HTTP status and the JSON
// error body; the Wails bindings use the same body.
func ErrorFor(err error) (int, ErrorBody) {
	status, code := http.StatusInternalServerError, "internal"
	switch {
	case errors.Is(err, taskrun.ErrNotFound), errors.Is(err, chat.ErrNotFound), errors.Is(err, registry.ErrNotFound):
		status, code = http.StatusNotFound, "not_found"
	case errors.Is(err, taskrun.ErrInvalid), errors.Is(err, chat.ErrInvalid), errors.Is(err, registry.ErrInvalid):
		status, code = http.StatusBadRequest, "invalid"
	case errors.Is(err, task.ErrInvalidTransition):
		status, code = http.StatusConflict, "invalid_transition"
	case errors.Is(err, taskrun.ErrConflict), errors.Is(err, chat.ErrConflict), errors.Is(err, registry.ErrConflict):
		status, code = http.StatusConflict, "conflict"
	}
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, sentence(err)
	return status, b
}

// sentence turns a wrapped error into one sentence for a person.
func sentence(err error) string {
	s := err.Error()
	for _, suffix := range []string{": " + taskrun.ErrConflict.Error(), ": " + task.ErrInvalidTransition.Error()} {
		s = strings.TrimSuffix(s, suffix)
	}
	s = strings.TrimPrefix(s, taskrun.ErrInvalid.Error()+": ")
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	// A sentence that ends in its own mark ("is Ollama running?") keeps it.
	if end := strings.TrimRight(s, ")\"'`"); !strings.HasSuffix(end, ".") && !strings.HasSuffix(end, "?") && !strings.HasSuffix(end, "!") {
		s += "."
	}
	return s
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Use "+allow+" here.")
}

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, message
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
