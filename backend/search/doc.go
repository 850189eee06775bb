package search

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/mapping"

	"conch/backend/conversation"
	"conch/backend/task"
)

// Kinds of hit, as GET /api/search groups them.
const (
	KindChat   = "chat"   // a chat: its title, or one of its messages
	KindTask   = "task"   // a task: its title, what was asked, its steps, summary and error
	KindOutput = "output" // a task's output log
)

// schema is the index's version: a different one is rebuilt.
const schema = 1

// Bounds on what one document holds, so one huge message or log does not
// make the index slow for everything.
const (
	maxBody   = 256 << 10 // a message or a task's own words
	maxOutput = 1 << 20   // the end of a task's output log
)

// record is one indexed document.
type record struct {
	Kind         string    `json:"kind"`
	Title        string    `json:"title"`
	Body         string    `json:"body"`
	Conversation string    `json:"conversation"` // the chat it is in (a task's: the chat it came from)
	Task         string    `json:"task"`         // the task it is of ("" for a person's chat)
	Status       string    `json:"status"`       // a task's status
	Host         string    `json:"host"`         // where it ran ("" for this computer)
	At           time.Time `json:"at"`
	Seq          uint64    `json:"seq"` // a message's place in its chat
}

func newMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = standard.Name
	text.Store = true
	text.IncludeTermVectors = true
	word := bleve.NewTextFieldMapping()
	word.Analyzer = keyword.Name
	word.Store = true
	word.IncludeInAll = false
	at := bleve.NewDateTimeFieldMapping()
	at.Store = true
	seq := bleve.NewNumericFieldMapping()
	seq.Store = true
	seq.Index = false
	doc := bleve.NewDocumentMapping()
	doc.AddFieldMappingsAt("title", text)
	doc.AddFieldMappingsAt("body", text)
	for _, f := range []string{"kind", "conversation", "task", "status", "host"} {
		doc.AddFieldMappingsAt(f, word)
	}
	doc.AddFieldMappingsAt("at", at)
	doc.AddFieldMappingsAt("seq", seq)
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = standard.Name
	return m
}

// Document ids: one per chat (its title), message, task and task output.
func chatID(id string) string               { return "c:" + id }
func messageID(c string, seq uint64) string { return fmt.Sprintf("m:%s:%d", c, seq) }
func taskID(id string) string               { return "t:" + id }
func outputID(id string) string             { return "o:" + id }

func chatRecord(c conversation.Conversation) record {
	return record{Kind: KindChat, Title: c.Title, Conversation: c.ID, Task: c.Origin.TaskID, At: c.UpdatedAt}
}

// messageRecord is what a message says, or false when it says nothing a
// person would look for (an answer's record, a limit notice's data).
func messageRecord(c conversation.Conversation, m conversation.Message) (record, bool) {
	var body string
	switch m.Kind {
	case conversation.User, conversation.Assistant, conversation.Notice, conversation.Step:
		body = m.Text
	case conversation.ToolCallKind:
		if m.ToolCall != nil {
			body = m.ToolCall.Title
		}
	case conversation.ToolResultKind:
		if m.ToolResult != nil {
			body = m.ToolResult.Output
		}
	case conversation.AskKind:
		if m.Ask != nil {
			body = m.Ask.Detail
		}
	case conversation.TaskEvent:
		if m.TaskEvent != nil && m.TaskEvent.Final {
			body = m.TaskEvent.Title + "\n" + m.TaskEvent.Summary
		}
	}
	if strings.TrimSpace(body) == "" {
		return record{}, false
	}
	// A message holds no title: a chat's title is its own record, and
	// a hit on a message names the chat as it is called now.
	return record{Kind: KindChat, Body: cut(body, maxBody), Conversation: c.ID, Task: c.Origin.TaskID,
		At: m.CreatedAt, Seq: m.Seq}, true
}

func taskRecord(t task.Task) record {
	parts := []string{t.Text}
	parts = append(parts, t.Steps...)
	parts = append(parts, t.Summary, t.Error, t.Note)
	if t.Result != nil && t.Result.Text != t.Summary {
		parts = append(parts, t.Result.Text)
	}
	at := t.CreatedAt
	if t.EndedAt != nil {
		at = *t.EndedAt
	}
	return record{Kind: KindTask, Title: t.Title, Body: cut(strings.Join(nonEmpty(parts), "\n"), maxBody),
		Conversation: t.ParentConversationID, Task: t.ID, Status: string(t.Status), At: at}
}

func outputRecord(t task.Task, out []byte) record {
	r := taskRecord(t)
	r.Kind, r.Body = KindOutput, cutStart(string(out), maxOutput)
	return r
}

func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// cut keeps the first n bytes of s, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cutStart keeps the last n bytes of s, on a rune boundary: the end of a
// log says how it went.
func cutStart(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
