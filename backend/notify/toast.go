package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"net/url"
	"strings"
	"unicode"

	"conch/backend/internal/brief"
)

// Windows toast payloads: what Conch hands the notification platform for one
// Message. They are built here, without a build tag, so `go test ./...` on
// any OS checks them; toast_windows.go only shows them.

// ToastGroup is the group of every Conch toast; with the tag it names the
// one toast a newer one replaces.
const ToastGroup = "tasks"

const (
	// maxToastTag is the longest tag or group Windows takes (64 characters
	// since Windows 10 1703; task tags are 41).
	maxToastTag = 64
	// maxToastTitle and maxToastBody (runes) and maxToastLines keep a toast
	// to what Windows shows (two lines of title, four of text) and its XML
	// well under the platform's payload limit, whatever a task's summary or
	// a question's command holds.
	maxToastTitle = 120
	maxToastBody  = 400
	maxToastLines = 4
)

// Toast is one Windows toast notification.
type Toast struct {
	// Tag and Group identify the toast: showing another with the same pair
	// replaces it, in the pop-up and in the notification centre.
	Tag   string
	Group string
	// XML is the toast's content in Windows' toast schema.
	XML string
}

// NewToast builds the toast for m: its title and body (cut to what a toast
// shows), a click that comes back as ActionOpen, and a button per action
// (Allow, Deny). Every activation carries ToastArgs, so it reaches the same
// ActionFunc as a D-Bus action does.
func NewToast(m Message) Toast {
	doc := toastDoc{
		Launch:         ToastArgs(m.Tag, ActionOpen),
		ActivationType: "foreground",
		Visual:         toastVisual{Binding: toastBinding{Template: "ToastGeneric"}},
	}
	title := cutText(m.Title, 2, maxToastTitle)
	if title == "" {
		title = "Conch"
	}
	texts := []toastText{{Value: title}}
	if body := cutText(m.Body, maxToastLines, maxToastBody); body != "" {
		texts = append(texts, toastText{Value: body})
	}
	doc.Visual.Binding.Text = texts
	if len(m.Actions) > 0 {
		// A question waits for an answer: leave it up longer than a finish.
		doc.Duration = "long"
		doc.Actions = &toastActions{}
		for _, a := range m.Actions {
			// Foreground: for a desktop app Windows sends every kind to its
			// COM activator alike, and Allow answers without opening Conch
			// because the ActionFunc says so, not the toast.
			doc.Actions.Action = append(doc.Actions.Action, toastAction{
				Content: label(a), Arguments: ToastArgs(m.Tag, a), ActivationType: "foreground",
			})
		}
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		// Only strings go in, and encoding/xml escapes (or replaces) every
		// one of them, so this cannot happen.
		panic("notify: toast XML: " + err.Error())
	}
	return Toast{Tag: toastTag(m.Tag), Group: ToastGroup, XML: string(out)}
}

// ToastArgs is the activation string of action on the toast for tag: what
// Windows hands back when that part of the toast is clicked.
func ToastArgs(tag, action string) string {
	return url.Values{"tag": {tag}, "action": {action}}.Encode()
}

// ParseToastArgs reads what ToastArgs wrote; ok is false for anything else
// (a toast of another app, or of a Conch that spoke otherwise).
func ParseToastArgs(args string) (tag, action string, ok bool) {
	v, err := url.ParseQuery(args)
	if err != nil || len(v["tag"]) != 1 || len(v["action"]) != 1 {
		return "", "", false
	}
	tag, action = v.Get("tag"), v.Get("action")
	switch action {
	case ActionOpen, ActionAllow, ActionDeny:
	default:
		return "", "", false
	}
	if tag == "" {
		return "", "", false
	}
	return tag, action, true
}

// toastTag is the platform tag for tag: itself when Windows takes it, else a
// digest of it, the same every time, so a newer toast still replaces the
// older one. The activation string keeps the whole tag either way.
func toastTag(tag string) string {
	if len(tag) <= maxToastTag {
		return tag
	}
	sum := sha256.Sum256([]byte(tag))
	return "h-" + hex.EncodeToString(sum[:])[:maxToastTag-2]
}

// cutText keeps at most lines lines and n runes of s, marking a cut with "…".
// Control characters go: XML cannot carry most of them, and encoding/xml
// would show each as U+FFFD, as it does each byte of broken UTF-8 (one
// U+FFFD here for a run of them).
func cutText(s string, lines, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, s))
	if parts := strings.Split(s, "\n"); len(parts) > lines {
		s = strings.TrimRight(strings.Join(parts[:lines], "\n"), " \t") + "…"
	}
	return brief.Clip(s, n)
}

// toastDoc is the part of Windows' toast schema Conch uses.
type toastDoc struct {
	XMLName        xml.Name      `xml:"toast"`
	Launch         string        `xml:"launch,attr"`
	ActivationType string        `xml:"activationType,attr"`
	Duration       string        `xml:"duration,attr,omitempty"`
	Visual         toastVisual   `xml:"visual"`
	Actions        *toastActions `xml:"actions"`
}

type toastVisual struct {
	Binding toastBinding `xml:"binding"`
}

type toastBinding struct {
	Template string      `xml:"template,attr"`
	Text     []toastText `xml:"text"`
}

type toastText struct {
	Value string `xml:",chardata"`
}

type toastActions struct {
	Action []toastAction `xml:"action"`
}

type toastAction struct {
	Content        string `xml:"content,attr"`
	Arguments      string `xml:"arguments,attr"`
	ActivationType string `xml:"activationType,attr"`
}

// LaunchedByToast removes from args the flag Windows adds when it starts
// Conch to deliver a toast's click because no Conch was running (COM starts
// the activator's program with -Embedding), and reports whether it was there.
func LaunchedByToast(args []string) (rest []string, ok bool) {
	rest = make([]string, 0, len(args))
	for _, a := range args {
		if strings.EqualFold(a, "-Embedding") || strings.EqualFold(a, "/Embedding") {
			ok = true
			continue
		}
		rest = append(rest, a)
	}
	return rest, ok
}
