package search

import (
	"conch/backend/errcode"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// ErrInvalid is a query that can never be answered as written.
var ErrInvalid = errcode.New(errcode.Invalid, "invalid search")

// Bounds of a search.
const (
	MaxQuery     = 200
	LimitDefault = 20
	LimitMax     = 50
	maxOffset    = 1000 // how deep paging goes
	snippetRunes = 180
)

// Query is one search: q's words (a "quoted phrase" matches as written) in
// titles and bodies, narrowed by the filters that are set.
type Query struct {
	Q            string
	Kind         string // KindChat, KindTask, KindOutput, or "" for all
	Conversation string // the chat a hit is in
	Host         string
	Status       string // a task's status
	From, To     time.Time
	Cursor       string // a Results.Next
	Limit        int
}

// Piece is part of a snippet; Mark is set on the words that matched.
type Piece struct {
	Text string `json:"text"`
	Mark bool   `json:"mark,omitempty"`
}

// Hit is one thing found.
type Hit struct {
	Kind         string    `json:"kind"`
	Conversation string    `json:"conversation,omitempty"`
	Task         string    `json:"task,omitempty"`
	Title        string    `json:"title"`
	Status       string    `json:"status,omitempty"`
	Host         string    `json:"host,omitempty"`
	At           time.Time `json:"at"`
	// Seq is the message a chat hit is on (0: the chat's title).
	Seq     uint64  `json:"seq,omitempty"`
	Snippet []Piece `json:"snippet" ts:"notnull"`
	Score   float64 `json:"score"`
}

// Results are a page of hits, best first, and the cursor of the next page
// ("" at the end). Indexing is set while the index is being rebuilt: the
// hits may not be all there are yet.
type Results struct {
	Hits     []Hit     `json:"hits" ts:"notnull"`
	Next     string    `json:"next"`
	Total    uint64    `json:"total"`
	Indexing *Progress `json:"indexing"`
}

// Search answers q.
func (x *Index) Search(q Query) (Results, error) {
	req, offset, err := request(q)
	if err != nil {
		return Results{}, err
	}
	idx, err := x.index()
	if err != nil {
		return Results{}, err
	}
	res, err := idx.Search(req)
	if err != nil {
		return Results{}, fmt.Errorf("search: %w", err)
	}
	out := Results{Hits: []Hit{}, Total: res.Total, Indexing: x.Rebuilding()}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, x.hit(h))
	}
	if next := offset + len(res.Hits); uint64(next) < res.Total && next < maxOffset && len(res.Hits) > 0 {
		out.Next = strconv.Itoa(next)
	}
	return out, nil
}

// request checks q at the edge and makes the index's request of it.
func request(q Query) (*bleve.SearchRequest, int, error) {
	text := strings.TrimSpace(q.Q)
	switch {
	case text == "":
		return nil, 0, fmt.Errorf("%w: say what to look for (q)", ErrInvalid)
	case len(text) > MaxQuery:
		return nil, 0, fmt.Errorf("%w: q is longer than %d bytes", ErrInvalid, MaxQuery)
	case !utf8.ValidString(text):
		return nil, 0, fmt.Errorf("%w: q is not UTF-8 text", ErrInvalid)
	case q.Kind != "" && q.Kind != KindChat && q.Kind != KindTask && q.Kind != KindOutput:
		return nil, 0, fmt.Errorf("%w: kind must be chat, task or output", ErrInvalid)
	case q.Limit < 0 || q.Limit > LimitMax:
		return nil, 0, fmt.Errorf("%w: limit must be between 1 and %d", ErrInvalid, LimitMax)
	case !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From):
		return nil, 0, fmt.Errorf("%w: to is before from", ErrInvalid)
	}
	offset := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 0 || n > maxOffset {
			return nil, 0, fmt.Errorf("%w: cursor %q is not one a search gave (start again without it)", ErrInvalid, q.Cursor)
		}
		offset = n
	}
	words := matching(text)
	if words == nil {
		return nil, 0, fmt.Errorf("%w: q has no words to look for", ErrInvalid)
	}
	must := []query.Query{words}
	for field, v := range map[string]string{"kind": q.Kind, "conversation": q.Conversation, "host": q.Host, "status": q.Status} {
		if v != "" {
			t := query.NewTermQuery(v)
			t.SetField(field)
			must = append(must, t)
		}
	}
	if !q.From.IsZero() || !q.To.IsZero() {
		var from, to *time.Time
		if !q.From.IsZero() {
			from = &q.From
		}
		if !q.To.IsZero() {
			to = &q.To
		}
		r := query.NewDateRangeQuery(deref(from), deref(to))
		r.SetField("at")
		must = append(must, r)
	}
	limit := q.Limit
	if limit == 0 {
		limit = LimitDefault
	}
	req := bleve.NewSearchRequestOptions(query.NewConjunctionQuery(must), limit, offset, false)
	req.Fields = []string{"kind", "title", "body", "conversation", "task", "status", "host", "at", "seq"}
	req.IncludeLocations = true
	return req, offset, nil
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// matching is the query for q's words and "phrases": each must be in the
// title or the body. Nil when q holds nothing to look for.
func matching(q string) query.Query {
	var parts []query.Query
	field := func(make func() query.FieldableQuery) query.Query {
		title, body := make(), make()
		title.SetField("title")
		body.SetField("body")
		return query.NewDisjunctionQuery([]query.Query{title, body})
	}
	for i, piece := range strings.Split(q, `"`) {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			continue
		}
		if i%2 == 1 { // inside quotes
			p := piece
			parts = append(parts, field(func() query.FieldableQuery { return query.NewMatchPhraseQuery(p) }))
			continue
		}
		for _, w := range strings.Fields(piece) {
			w := w
			parts = append(parts, field(func() query.FieldableQuery { return query.NewMatchQuery(w) }))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return query.NewConjunctionQuery(parts)
}

// hit is what the index found, with a snippet around its first match.
func (x *Index) hit(h *search.DocumentMatch) Hit {
	str := func(f string) string { s, _ := h.Fields[f].(string); return s }
	out := Hit{Kind: str("kind"), Conversation: str("conversation"), Task: str("task"), Title: str("title"),
		Status: str("status"), Host: str("host"), Score: h.Score}
	if at, err := time.Parse(time.RFC3339, str("at")); err == nil {
		out.At = at
	}
	if seq, ok := h.Fields["seq"].(float64); ok {
		out.Seq = uint64(seq)
	}
	if out.Kind == KindChat && out.Title == "" {
		if c, err := x.cfg.Store.Conversation(out.Conversation); err == nil {
			out.Title = c.Title // a message's hit names its chat as it is called now
		}
	}
	field := "body"
	if len(h.Locations["body"]) == 0 {
		field = "title"
	}
	out.Snippet = snippet(str(field), h.Locations[field])
	return out
}

// snippet is a piece of text around its first match, the matches marked.
func snippet(text string, terms search.TermLocationMap) []Piece {
	var spans [][2]int
	for _, locs := range terms {
		for _, l := range locs {
			if int(l.End) <= len(text) && l.Start < l.End {
				spans = append(spans, [2]int{int(l.Start), int(l.End)})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	from := 0
	if len(spans) > 0 {
		from = back(text, spans[0][0], snippetRunes/3)
	}
	to := forward(text, from, snippetRunes)
	var out []Piece
	if from > 0 {
		out = append(out, Piece{Text: "…"})
	}
	at := from
	for _, s := range spans {
		if s[0] < at || s[1] > to {
			continue
		}
		if s[0] > at {
			out = append(out, Piece{Text: text[at:s[0]]})
		}
		out = append(out, Piece{Text: text[s[0]:s[1]], Mark: true})
		at = s[1]
	}
	if at < to {
		out = append(out, Piece{Text: text[at:to]})
	}
	if to < len(text) {
		out = append(out, Piece{Text: "…"})
	}
	return out
}

// back is the byte offset n runes before i in s (or 0), after a line break
// if one is nearer.
func back(s string, i, n int) int {
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		if s[i-size] == '\n' {
			return i
		}
		i -= size
	}
	return i
}

// forward is the byte offset n runes after i in s (or its end).
func forward(s string, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
