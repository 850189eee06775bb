// Package tool holds the host tools a chat's model may call. Each tool
// declares its side effect (none, edit, command, network) and a JSON Schema
// for its arguments; the chat's permission gate decides from the effect
// whether it runs, asks or is refused. Arguments are checked here, at the
// edge: a bad call is an error the model reads, never a panic.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"conch/backend/procmark"
	"conch/backend/provider"
)

// Effect is the side effect a tool may have.
type Effect string

const (
	// None reads only (list, read, search inside the folder).
	None Effect = "none"
	// Edit changes files inside the folder.
	Edit Effect = "edit"
	// Command runs a program.
	Command Effect = "command"
	// Network reaches another computer.
	Network Effect = "network"
)

// Effects lists every effect, from the mildest.
var Effects = []Effect{None, Edit, Command, Network}

// Env is what a tool works with for one chat.
type Env struct {
	// Dir is the chat's folder (absolute); paths resolve inside it.
	Dir string
	// Log receives every command's output as it is produced (may be nil).
	Log io.Writer
	// HTTP fetches URLs; nil uses a client that refuses loopback and
	// private addresses (tests inject one that reaches httptest).
	HTTP *http.Client
	// Grace is how long a command has after SIGTERM before SIGKILL
	// (default 2 s).
	Grace time.Duration
	// Mark is what every process a command starts carries (procmark), so
	// healing after a crash finds them and nothing else.
	Mark procmark.Mark
	// Extra holds KEY=VALUE pairs every command gets on top of Conch's
	// environment (a helper's CONCH_PORT).
	Extra []string
}

// Tool is one host tool.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object.
	Schema json.RawMessage
	Effect Effect
	// Title says what a call does, for a compact step and an ask
	// ("Read go.mod", "Run go test ./..."); it never fails.
	Title func(args json.RawMessage) string
	// Run does the call. An error is shown to the model as a failed call.
	Run func(ctx context.Context, env Env, args json.RawMessage) (string, error)
}

// Spec is the tool as declared to a provider.
func (t Tool) Spec() provider.ToolSpec {
	return provider.ToolSpec{Name: t.Name, Description: t.Description, Schema: t.Schema}
}

// Set is a group of tools by name.
type Set map[string]Tool

// Host returns the built-in host tools.
func Host() Set {
	s := Set{}
	for _, t := range []Tool{listFiles, readFile, searchFiles, writeFile, editFile, runCommand, fetchURL} {
		s[t.Name] = t
	}
	return s
}

// Specs declares every tool of s to a provider, sorted by name.
func (s Set) Specs() []provider.ToolSpec {
	out := make([]provider.ToolSpec, 0, len(s))
	for _, t := range s {
		out = append(out, t.Spec())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ErrUnknown is returned for a call to a tool that does not exist.
var ErrUnknown = errors.New("no such tool")

// Get returns the named tool or an error matching ErrUnknown that lists the
// tools there are.
func (s Set) Get(name string) (Tool, error) {
	t, ok := s[name]
	if !ok {
		var names []string
		for n := range s {
			names = append(names, n)
		}
		sort.Strings(names)
		return Tool{}, fmt.Errorf("%w %q; the tools are %s", ErrUnknown, name, strings.Join(names, ", "))
	}
	return t, nil
}

// decode reads a call's arguments into v, refusing unknown fields, and
// checks that every required field was given (non-empty).
func decode(name string, args json.RawMessage, v any, required ...string) error {
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(args, &present); err != nil {
		return fmt.Errorf("%s: the arguments are not a JSON object: %v", name, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: bad arguments: %v", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	for _, f := range required {
		raw, ok := present[f]
		if !ok || string(raw) == "null" || string(raw) == `""` {
			return fmt.Errorf("%s: %q is required", name, f)
		}
	}
	return nil
}

// titleOf builds a Title func from a verb and the argument that names what
// the call works on.
func titleOf(verb, field string) func(json.RawMessage) string {
	return func(args json.RawMessage) string {
		var m map[string]any
		_ = json.Unmarshal(args, &m)
		s, _ := m[field].(string)
		if s == "" {
			s = "."
		}
		if len(s) > 120 {
			s = s[:117] + "…"
		}
		return verb + " " + s
	}
}

// schema builds a JSON Schema object from property definitions.
func schema(required []string, props string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
}

// Decode reads a call's arguments into v as the host tools do: unknown
// fields are refused and every required field must be given. Tools made
// elsewhere (delegate, report_result) use it to check at the same edge.
func Decode(name string, args json.RawMessage, v any, required ...string) error {
	return decode(name, args, v, required...)
}

// ObjectSchema builds the JSON Schema of an arguments object from its
// properties (a JSON object's inside, without braces) and required names.
func ObjectSchema(required []string, props string) json.RawMessage {
	return schema(required, props)
}
