// Package errcode is the one vocabulary of errors the surfaces show. Every
// error a person or a client sees carries a Code: the "code" of the JSON
// error body, which the gateway maps to an HTTP status in one table and the
// window's bindings pass on as it is. Engines own their sentinels (each
// package's errors.go) and make them with New, so a wrapped sentinel keeps
// its code however deep it sits.
package errcode

import (
	"errors"
	"strings"
)

// Code names a kind of error, in the JSON error body. The frontend's
// contract is generated from these constants.
type Code string

const (
	// NotFound is returned when an id names nothing (a task, a chat, a
	// provider) or a route does not exist.
	NotFound Code = "not_found"
	// Invalid is returned for a request that can never succeed as written
	// (empty text, an unknown mode, a bad offset).
	Invalid Code = "invalid"
	// Conflict is returned when the state of the thing does not allow the
	// request now (a second answer, a message while a reply runs).
	Conflict Code = "conflict"
	// InvalidTransition is returned when a task's status does not allow
	// the change (retry a working task, stop a finished one).
	InvalidTransition Code = "invalid_transition"
	// Unauthorized is returned without a valid sign-in token or ticket.
	Unauthorized Code = "unauthorized"
	// BadHost is returned when the Host header is not one Conch serves.
	BadHost Code = "bad_host"
	// BadOrigin is returned when the Origin header is not the served one.
	BadOrigin Code = "bad_origin"
	// BadPath is returned for a path with ".", ".." or an empty part.
	BadPath Code = "bad_path"
	// BadJSON is returned for a body that is not one valid JSON value of
	// the right shape.
	BadJSON Code = "bad_json"
	// UnknownField is returned for a body with a field the route does not
	// take.
	UnknownField Code = "unknown_field"
	// NotJSON is returned for a body whose Content-Type is not JSON.
	NotJSON Code = "not_json"
	// TooLarge is returned for a body over the limit.
	TooLarge Code = "too_large"
	// MethodNotAllowed is returned for a method the route does not take.
	MethodNotAllowed Code = "method_not_allowed"
	// TooManyStreams is returned when too many event streams are open.
	TooManyStreams Code = "too_many_streams"
	// Internal is every error that carries no code: a bug, or a failure
	// of the machine (a full disk).
	Internal Code = "internal"
)

// The sentinels the engines share: a request that can never succeed as
// written, and one the state does not allow now. An engine offers them as
// its own (chat.ErrInvalid is ErrInvalid) beside the ones only it has (its
// ErrNotFound names what it did not find).
var (
	ErrInvalid  = New(Invalid, "invalid request")
	ErrConflict = New(Conflict, "conflict")
)

// Codes lists every code.
var Codes = []Code{NotFound, Invalid, Conflict, InvalidTransition, Unauthorized, BadHost, BadOrigin, BadPath,
	BadJSON, UnknownField, NotJSON, TooLarge, MethodNotAllowed, TooManyStreams, Internal}

// Error is a sentinel with a code. Wrap it with fmt.Errorf("…: %w", err)
// to say more; Of finds its code through any wrapping.
type Error struct {
	Code Code
	text string
}

// New returns a sentinel of code whose text is text.
func New(code Code, text string) *Error { return &Error{Code: code, text: text} }

func (e *Error) Error() string { return e.text }

// Of returns the code of the first sentinel err wraps, or Internal.
func Of(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Body is the JSON shape of every error answer, over HTTP and through the
// window's bindings alike.
type Body struct {
	Error Detail `json:"error"`
}

// Detail is an error's code and the sentence a person reads.
type Detail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// BodyOf is err as the surfaces give it: its code and one sentence.
func BodyOf(err error) Body {
	return Body{Error: Detail{Code: Of(err), Message: Sentence(err)}}
}

// Sentence turns a wrapped error into one sentence for a person: the
// sentinel's own word ("conflict", "invalid request") is dropped where it
// only labels the reason, the first letter is capitalised, and a full stop
// ends it unless it ends in its own mark.
func Sentence(err error) string {
	s := err.Error()
	var e *Error
	if errors.As(err, &e) && e.text != "" && s != e.text {
		s = strings.TrimSuffix(s, ": "+e.text)
		s = strings.TrimPrefix(s, e.text+": ")
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if end := strings.TrimRight(s, ")\"'`"); !strings.HasSuffix(end, ".") && !strings.HasSuffix(end, "?") && !strings.HasSuffix(end, "!") {
		s += "."
	}
	return s
}
