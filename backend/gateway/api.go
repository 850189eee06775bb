package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"conch/backend/errcode"
	"conch/backend/service"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

func (g *Gateway) routes() {
	g.mux.HandleFunc("/api/events", g.events)
	g.mux.HandleFunc("/api/events/ticket", g.ticket)
	g.mux.HandleFunc("/api/tasks", g.tasks)
	g.mux.HandleFunc("/api/preferences", g.preferences)
	g.mux.HandleFunc("/api/doctor", g.doctor)
	g.mux.HandleFunc("/api/approvals", g.approvals)
	g.mux.HandleFunc("/api/backup", g.backup)
	g.mux.HandleFunc("/api/tasks/", g.taskByID)
	g.mux.HandleFunc("/api/conversations", g.conversations)
	g.mux.HandleFunc("/api/conversations/", g.conversationByID)
	g.mux.HandleFunc("/api/providers", g.providers)
	g.mux.HandleFunc("/api/providers/", g.providerByID)
	g.mux.HandleFunc("/api/found", g.found)
	g.mux.HandleFunc("/api/about", g.about)
	g.mux.HandleFunc("/api/search", g.search)
	g.mux.HandleFunc("/api/activity", g.activity)
	g.mux.HandleFunc("/api/push/key", g.pushKey)
	g.mux.HandleFunc("/api/push/subscriptions", g.pushSubscriptions)
	g.mux.HandleFunc("/api/routines", g.routines)
	g.mux.HandleFunc("/api/routines/", g.routineByID)
	g.mux.HandleFunc("/api/hosts", g.hostList)
	g.mux.HandleFunc("/api/hosts/", g.hostByID)
	g.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path)
	})
	g.mux.HandleFunc("/", g.static)
}

func (g *Gateway) tasks(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		v, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, errcode.Invalid, "The query string is not well formed (escape % as %25).")
			return
		}
		q, msg := taskQuery(v)
		if msg != "" {
			writeError(w, errcode.Invalid, msg)
			return
		}
		l, err := g.api.ListTasks(q)
		reply(w, http.StatusOK, l, err)
	case http.MethodPost:
		var req taskrun.CreateRequest
		if !decode(w, r, &req) {
			return
		}
		t, err := g.api.CreateTask(req)
		reply(w, http.StatusCreated, t, err)
	default:
		methodNotAllowed(w, "GET, POST")
	}
}

// taskQuery reads GET /api/tasks's parameters (group, status — a list
// split by commas, or repeated —, q, conversation, cursor, limit); msg
// says what is wrong with them. The service checks what they mean.
func taskQuery(v url.Values) (q service.TaskQuery, msg string) {
	for name := range v {
		switch name {
		case "group", "status", "q", "conversation", "cursor", "limit":
		default:
			return q, fmt.Sprintf("Unknown parameter %q: the tasks list takes group, status, q, conversation, cursor and limit.", name)
		}
	}
	q.Group, q.Query, q.Conversation, q.Cursor = v.Get("group"), v.Get("q"), v.Get("conversation"), v.Get("cursor")
	for _, s := range v["status"] {
		for _, st := range strings.Split(s, ",") {
			if st = strings.TrimSpace(st); st != "" {
				q.Statuses = append(q.Statuses, task.Status(st))
			}
		}
	}
	if len(q.Statuses) > len(task.Statuses) {
		return q, "status lists more statuses than there are."
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return q, fmt.Sprintf("limit must be a whole number from 1 to %d.", service.MaxPage)
		}
		q.Limit = n
	}
	return q, ""
}

// preferences reads (GET) and changes (PATCH: only the fields sent) the
// person's preferences.
func (g *Gateway) preferences(w http.ResponseWriter, r *http.Request) {
	cur, err := g.api.Preferences()
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
		saved, err := g.api.SetPreferences(cur)
		reply(w, http.StatusOK, saved, err)
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
	a, err := g.api.Approvals()
	reply(w, http.StatusOK, map[string]any{"approvals": a}, err)
}

// about says what the page needs to know of the computer Conch runs on
// (the person's home folder, which it writes as ~).
func (g *Gateway) about(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	a, err := g.api.About()
	reply(w, http.StatusOK, a, err)
}

func (g *Gateway) doctor(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	rep, err := g.api.Doctor()
	reply(w, http.StatusOK, rep, err)
}

// taskByID serves /api/tasks/:id and /api/tasks/:id/<action>.
func (g *Gateway) taskByID(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/tasks/")
	id, action, _ := strings.Cut(rest, "/")
	if id == "" || strings.Contains(action, "/") {
		writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path)
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
		"resume": {http.MethodPost, g.resume},
		"answer": {http.MethodPost, g.answer},
		// Removing a kept worktree; with work in it only with confirm.
		"remove-worktree": {http.MethodPost, g.removeWorktree},
		// Bringing a helper's branch from its host into the clone here.
		"fetch":       {http.MethodPost, g.fetch},
		"open-folder": {http.MethodPost, g.openFolder},
		"open":        {http.MethodPost, g.openTask},
	}
	if action == "" && r.Method == http.MethodDelete {
		g.deleteTask(w, r, id)
		return
	}
	h, ok := route[action]
	if !ok {
		writeError(w, errcode.NotFound, "No such API route: "+r.URL.Path)
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
	t, err := g.api.GetTask(id)
	reply(w, http.StatusOK, t, err)
}

func (g *Gateway) stop(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	t, err := g.api.StopTask(id)
	reply(w, http.StatusOK, t, err)
}

func (g *Gateway) retry(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	t, err := g.api.RetryTask(id)
	reply(w, http.StatusOK, t, err)
}

func (g *Gateway) resume(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	t, err := g.api.ResumeTask(id)
	reply(w, http.StatusOK, t, err)
}

// RemoveWorktreeRequest is the body of POST /api/tasks/:id/remove-worktree.
type RemoveWorktreeRequest struct {
	Confirm bool `json:"confirm"`
}

func (g *Gateway) removeWorktree(w http.ResponseWriter, r *http.Request, id string) {
	var req RemoveWorktreeRequest
	if !decode(w, r, &req) {
		return
	}
	t, err := g.api.RemoveWorktree(id, req.Confirm)
	reply(w, http.StatusOK, t, err)
}

func (g *Gateway) fetch(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	f, err := g.api.FetchTask(id)
	reply(w, http.StatusOK, f, err)
}

func (g *Gateway) openFolder(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	if err := g.api.OpenFolder(id); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// openTask brings the window forward on the task, as its notification's
// click does.
func (g *Gateway) openTask(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	if err := g.api.OpenTask(id); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) deleteTask(w http.ResponseWriter, r *http.Request, id string) {
	if !emptyBody(w, r) {
		return
	}
	if err := g.api.DeleteTask(id); err != nil {
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
		writeError(w, errcode.Invalid, "Send {\"askId\": \"…\", \"allow\": true|false}.")
		return
	}
	t, err := g.api.AnswerTask(id, req.AskID, *req.Allow)
	reply(w, http.StatusOK, t, err)
}

// output answers a task's log from ?offset= as text, with X-Next-Offset
// saying where the next read starts.
func (g *Gateway) output(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	offset, err := intParam(q.Get("offset"), 0)
	if err != nil || offset < 0 {
		writeError(w, errcode.Invalid, "offset must be a whole number of bytes, 0 or more.")
		return
	}
	max, err := intParam(q.Get("max"), service.MaxOutputRead)
	if err != nil || max <= 0 {
		writeError(w, errcode.Invalid, "max must be a whole number of bytes, 1 or more.")
		return
	}
	if q.Get("follow") == "1" {
		g.followOutput(w, r, id, offset)
		return
	}
	chunk, err := g.api.ReadOutput(id, offset, int(min(max, service.MaxOutputRead)))
	if err != nil {
		if errcode.Of(err) == errcode.Internal {
			g.cfg.Log.Error("read output", "task", id, "err", err)
		}
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Next-Offset", strconv.FormatInt(chunk.Next, 10))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, chunk.Data)
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
		writeError(w, errcode.NotFound, "This build has no frontend; run `make build`.")
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
		writeError(w, errcode.NotFound, "The frontend is not built; run `make build`.")
		return
	}
	if ct := mime.TypeByExtension(extOf(name)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	switch name {
	case "index.html":
		w.Header().Set("Cache-Control", "no-store")
	case serviceWorker:
		// The browser checks its service worker for updates against the
		// server, never a cache, and it may control the whole page.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Service-Worker-Allowed", "/")
	}
	http.ServeContent(w, r, name, fsModTime, bytes.NewReader(b))
}

// serviceWorker is the page's service worker (Web Push while the page is
// closed), served at the root so that its scope is the whole page.
const serviceWorker = "sw.js"

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
		writeError(w, errcode.NotJSON, "Send the body as JSON with Content-Type: application/json.")
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
		writeError(w, errcode.BadJSON, "The body holds more than one JSON value.")
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
		writeError(w, errcode.TooLarge, "The body is larger than 1 MiB.")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		writeError(w, errcode.UnknownField, "Unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+".")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		writeError(w, errcode.BadJSON, "The body is not valid JSON.")
	case errors.As(err, &typ):
		writeError(w, errcode.BadJSON, "Field "+typ.Field+" has the wrong type.")
	default:
		writeError(w, errcode.BadJSON, "The body could not be read as JSON.")
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
		writeError(w, errcode.Invalid, "This action takes no body.")
		return false
	}
	return true
}

// reply answers v with status, or the error's status and body.
func reply(w http.ResponseWriter, status int, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, status, v)
}

// writeErr answers with the status and body ErrorFor gives err.
func writeErr(w http.ResponseWriter, err error) {
	status, body := ErrorFor(err)
	writeJSON(w, status, body)
}

// statusOf is the one table from an error's code to its HTTP status.
var statusOf = map[errcode.Code]int{
	errcode.NotFound:          http.StatusNotFound,
	errcode.Invalid:           http.StatusBadRequest,
	errcode.Conflict:          http.StatusConflict,
	errcode.InvalidTransition: http.StatusConflict,
	errcode.Unauthorized:      http.StatusUnauthorized,
	errcode.BadHost:           http.StatusForbidden,
	errcode.BadOrigin:         http.StatusForbidden,
	errcode.BadPath:           http.StatusBadRequest,
	errcode.BadJSON:           http.StatusBadRequest,
	errcode.UnknownField:      http.StatusBadRequest,
	errcode.NotJSON:           http.StatusUnsupportedMediaType,
	errcode.TooLarge:          http.StatusRequestEntityTooLarge,
	errcode.MethodNotAllowed:  http.StatusMethodNotAllowed,
	errcode.TooManyStreams:    http.StatusServiceUnavailable,
	errcode.Internal:          http.StatusInternalServerError,
}

// StatusOf is the HTTP status of an error's code.
func StatusOf(c errcode.Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorFor maps an error from the engine to its HTTP status and the JSON
// error body; the window's bindings give the same body.
func ErrorFor(err error) (int, errcode.Body) {
	b := errcode.BodyOf(err)
	return StatusOf(b.Error.Code), b
}

// sentence turns a wrapped error into one sentence for a person.
func sentence(err error) string { return errcode.Sentence(err) }

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, errcode.MethodNotAllowed, "Use "+allow+" here.")
}

// ErrorBody is the JSON shape of every error answer.
type ErrorBody = errcode.Body

func writeError(w http.ResponseWriter, code errcode.Code, message string) {
	writeJSON(w, StatusOf(code), errcode.Body{Error: errcode.Detail{Code: code, Message: message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
