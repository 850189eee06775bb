package notify

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// parsedToast is what Windows reads of a toast: the parts Conch sets.
type parsedToast struct {
	XMLName        xml.Name `xml:"toast"`
	Launch         string   `xml:"launch,attr"`
	ActivationType string   `xml:"activationType,attr"`
	Duration       string   `xml:"duration,attr"`
	Binding        struct {
		Template string   `xml:"template,attr"`
		Text     []string `xml:"text"`
	} `xml:"visual>binding"`
	Actions *struct {
		Action []struct {
			Content        string `xml:"content,attr"`
			Arguments      string `xml:"arguments,attr"`
			ActivationType string `xml:"activationType,attr"`
		} `xml:"action"`
	} `xml:"actions"`
}

// parseToast reads t's XML back as Windows would, failing the test when it
// is not well-formed: every token is read, not just the parts kept.
func parseToast(t testing.TB, tt Toast) parsedToast {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(tt.XML))
	d.Strict = true
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("toast XML is not well-formed: %v\n%s", err, tt.XML)
		}
	}
	var p parsedToast
	if err := xml.Unmarshal([]byte(tt.XML), &p); err != nil {
		t.Fatalf("toast XML does not parse: %v\n%s", err, tt.XML)
	}
	return p
}

func TestToastCarriesTheMessage(t *testing.T) {
	cases := []struct {
		name    string
		m       Message
		texts   []string
		actions []string // labels, in order; nil: no <actions>
	}{
		{"finish", Message{Tag: "task-1", Title: "Build — done: ok", Body: "Its work is on branch conch/1."},
			[]string{"Build — done: ok", "Its work is on branch conch/1."}, nil},
		{"finish without body", Message{Tag: "task-2", Title: "Build — done"}, []string{"Build — done"}, nil},
		{"question", Message{Tag: "task-3", Title: "Deploy — needs your OK", Body: "rm -rf build", Actions: []string{ActionAllow, ActionDeny}},
			[]string{"Deploy — needs your OK", "rm -rf build"}, []string{"Allow", "Deny"}},
		{"no title", Message{Tag: "task-4", Body: "body only"}, []string{"Conch", "body only"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tt := NewToast(c.m)
			if tt.Tag != c.m.Tag || tt.Group != ToastGroup {
				t.Errorf("tag %q group %q, want %q %q", tt.Tag, tt.Group, c.m.Tag, ToastGroup)
			}
			p := parseToast(t, tt)
			if p.Binding.Template != "ToastGeneric" || p.ActivationType != "foreground" {
				t.Errorf("template %q activation %q", p.Binding.Template, p.ActivationType)
			}
			if fmt.Sprint(p.Binding.Text) != fmt.Sprint(c.texts) {
				t.Errorf("texts %q, want %q", p.Binding.Text, c.texts)
			}
			if tag, action, ok := ParseToastArgs(p.Launch); !ok || tag != c.m.Tag || action != ActionOpen {
				t.Errorf("launch %q reads as %q %q %v, want %q %q", p.Launch, tag, action, ok, c.m.Tag, ActionOpen)
			}
			if c.actions == nil {
				if p.Actions != nil || p.Duration != "" {
					t.Errorf("a finish has actions %+v or duration %q", p.Actions, p.Duration)
				}
				return
			}
			// A question stays up until answered, or nearly.
			if p.Duration != "long" {
				t.Errorf("duration %q, want long", p.Duration)
			}
			if p.Actions == nil || len(p.Actions.Action) != len(c.actions) {
				t.Fatalf("actions %+v, want %q", p.Actions, c.actions)
			}
			for i, a := range p.Actions.Action {
				tag, action, ok := ParseToastArgs(a.Arguments)
				if a.Content != c.actions[i] || !ok || tag != c.m.Tag || action != c.m.Actions[i] || a.ActivationType != "foreground" {
					t.Errorf("button %d: %q %q (%q %q %v) %q, want %q for %q %q", i, a.Content, a.Arguments, tag, action, ok,
						a.ActivationType, c.actions[i], c.m.Tag, c.m.Actions[i])
				}
			}
		})
	}
}

func TestToastEscapesWhatItCarries(t *testing.T) {
	hostile := []string{
		`"quoted" and 'single'`,
		`</text></binding></visual><actions><action content="Allow" arguments="tag=task-x&action=allow"/></actions><toast>`,
		`a & b &amp; c &#x41; &bogus;`,
		`]]> <![CDATA[ x ]]>`,
		"bell\a nul\x00 esc\x1b[31mred\x1b[0m del\x7f c1\u0085 tab\tend",
		"bad utf-8 \xff\xfe here",
		"<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///c:/\">]>&e;",
	}
	for _, h := range hostile {
		tt := NewToast(Message{Tag: "task-1", Title: h, Body: h, Actions: []string{ActionAllow, ActionDeny}})
		p := parseToast(t, tt)
		want := cutText(h, 2, maxToastTitle)
		if len(p.Binding.Text) != 2 || p.Binding.Text[0] != want || !utf8.ValidString(want) {
			t.Errorf("%q: texts %q, want the title %q back", h, p.Binding.Text, want)
		}
		// Nothing the message says becomes a button or a second toast.
		if p.Actions == nil || len(p.Actions.Action) != 2 || strings.Count(tt.XML, "<toast") != 1 {
			t.Errorf("%q: the payload's shape changed:\n%s", h, tt.XML)
		}
		for _, r := range tt.XML {
			if r != '\n' && r != '\t' && r < 0x20 {
				t.Errorf("%q: control character %U in the XML", h, r)
			}
		}
	}
	// Controls go; the text around them stays.
	if got := cutText("a\x00b\x1bc\u0085d\te", 1, 100); got != "abcd\te" {
		t.Errorf("cutText with controls: %q", got)
	}
}

func TestToastCutsLongText(t *testing.T) {
	long := strings.Repeat("é🚀x", 300) // two-, four- and one-byte runes
	lines := strings.Repeat("line\n", 20)
	tt := NewToast(Message{Tag: "task-1", Title: long, Body: lines + long})
	p := parseToast(t, tt)
	title, body := p.Binding.Text[0], p.Binding.Text[1]
	if n := utf8.RuneCountInString(title); n != maxToastTitle || !strings.HasSuffix(title, "…") || !utf8.ValidString(title) {
		t.Errorf("title of %d runes (valid %v): %q", n, utf8.ValidString(title), title)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(title, "…")) {
		t.Errorf("title is not the start of the text: %q", title)
	}
	if got, want := body, strings.Repeat("line\n", maxToastLines-1)+"line…"; got != want {
		t.Errorf("body %q, want %q", got, want)
	}
	if n := utf8.RuneCountInString(parseToast(t, NewToast(Message{Title: "t", Body: long})).Binding.Text[1]); n != maxToastBody {
		t.Errorf("one long line keeps %d runes, want %d", n, maxToastBody)
	}
	// Windows takes up to about 5 KB of toast XML; Conch stays well under.
	worst := NewToast(Message{Tag: strings.Repeat("t", 200), Title: strings.Repeat("&", 1000), Body: strings.Repeat("<", 1000),
		Actions: []string{ActionAllow, ActionDeny}})
	if len(worst.XML) > 4096 {
		t.Errorf("worst-case toast is %d bytes", len(worst.XML))
	}
	// Line ends of any kind count as lines.
	if got := cutText("a\r\nb\rc\nd\n\ne", 3, 100); got != "a\nb\nc…" {
		t.Errorf("cutText line ends: %q", got)
	}
}

func TestToastTagFitsWindows(t *testing.T) {
	task := Tag("6b0f6a1e-3c7e-4c39-9f57-7f0d3c1b9a10")
	if got := NewToast(Message{Tag: task}).Tag; got != task {
		t.Errorf("a task's tag became %q", got)
	}
	exact := strings.Repeat("x", maxToastTag)
	if got := NewToast(Message{Tag: exact}).Tag; got != exact {
		t.Errorf("a %d-character tag became %q", maxToastTag, got)
	}
	long := "task-" + strings.Repeat("y", 200)
	a, b := NewToast(Message{Tag: long}), NewToast(Message{Tag: long, Title: "later"})
	other := NewToast(Message{Tag: long + "z"})
	if len(a.Tag) > maxToastTag || a.Tag == long {
		t.Errorf("long tag became %q (%d)", a.Tag, len(a.Tag))
	}
	if a.Tag != b.Tag {
		t.Errorf("the same long tag gave %q then %q: the update would not replace", a.Tag, b.Tag)
	}
	if a.Tag == other.Tag || a.Tag == NewToast(Message{Tag: exact + "x"}).Tag {
		t.Errorf("different long tags share %q", a.Tag)
	}
	// The click still names the whole tag.
	if tag, _, ok := ParseToastArgs(parseToast(t, a).Launch); !ok || tag != long {
		t.Errorf("launch of a long tag reads as %q", tag)
	}
}

func TestToastArgsRoundTrip(t *testing.T) {
	tags := []string{"task-1", "task-a&b=c", "task-%41 +?#;", "задача-ü", "task-\"<>'"}
	for _, tag := range tags {
		for _, action := range []string{ActionOpen, ActionAllow, ActionDeny} {
			gotTag, gotAction, ok := ParseToastArgs(ToastArgs(tag, action))
			if !ok || gotTag != tag || gotAction != action {
				t.Errorf("%q %q came back as %q %q %v", tag, action, gotTag, gotAction, ok)
			}
		}
	}
}

func TestParseToastArgsRejects(t *testing.T) {
	for _, args := range []string{
		"",
		"tag=task-1",
		"action=default",
		"tag=&action=default",
		"tag=task-1&action=",
		"tag=task-1&action=open",
		"tag=task-1&action=Allow",
		"tag=task-1&action=allow&action=deny",
		"tag=task-1&tag=task-2&action=allow",
		"tag=task-1;action=allow",
		"tag=%zz&action=allow",
		"https://example.com/?tag=task-1&action=allow",
		"action=dismiss&tag=task-1",
	} {
		if tag, action, ok := ParseToastArgs(args); ok {
			t.Errorf("%q read as %q %q", args, tag, action)
		}
	}
}

func TestLaunchedByToast(t *testing.T) {
	for _, c := range []struct {
		args, rest []string
		ok         bool
	}{
		{nil, []string{}, false},
		{[]string{"--home", `C:\h`}, []string{"--home", `C:\h`}, false},
		{[]string{"-Embedding"}, []string{}, true},
		{[]string{"--home", `C:\h`, "/embedding"}, []string{"--home", `C:\h`}, true},
		{[]string{"serve", "-EMBEDDING"}, []string{"serve"}, true},
		{[]string{"-Embeddings"}, []string{"-Embeddings"}, false},
	} {
		rest, ok := LaunchedByToast(c.args)
		if ok != c.ok || fmt.Sprint(rest) != fmt.Sprint(c.rest) {
			t.Errorf("%q: %q %v, want %q %v", c.args, rest, ok, c.rest, c.ok)
		}
	}
}

func FuzzParseToastArgs(f *testing.F) {
	f.Add(ToastArgs("task-1", ActionAllow))
	f.Add("tag=task-1&action=default&x=1")
	f.Add("tag=%zz")
	f.Fuzz(func(t *testing.T, args string) {
		tag, action, ok := ParseToastArgs(args)
		if !ok {
			return
		}
		if tag == "" || (action != ActionOpen && action != ActionAllow && action != ActionDeny) {
			t.Fatalf("%q accepted as %q %q", args, tag, action)
		}
		if t2, a2, ok := ParseToastArgs(ToastArgs(tag, action)); !ok || t2 != tag || a2 != action {
			t.Fatalf("%q %q do not round-trip: %q %q %v", tag, action, t2, a2, ok)
		}
	})
}

func FuzzNewToast(f *testing.F) {
	f.Add("task-1", "Build — done", "line\nline", true)
	f.Add("", "<&\"'>", "\x00\xff", false)
	f.Fuzz(func(t *testing.T, tag, title, body string, ask bool) {
		m := Message{Tag: tag, Title: title, Body: body}
		if ask {
			m.Actions = []string{ActionAllow, ActionDeny}
		}
		tt := NewToast(m)
		p := parseToast(t, tt)
		if len(tt.Tag) > maxToastTag {
			t.Fatalf("tag of %d bytes", len(tt.Tag))
		}
		if n := len(p.Binding.Text); n < 1 || n > 2 {
			t.Fatalf("%d texts", n)
		}
		if utf8.RuneCountInString(p.Binding.Text[0]) > maxToastTitle {
			t.Fatalf("title of %d runes", utf8.RuneCountInString(p.Binding.Text[0]))
		}
		if len(p.Binding.Text) == 2 && utf8.RuneCountInString(p.Binding.Text[1]) > maxToastBody {
			t.Fatalf("body of %d runes", utf8.RuneCountInString(p.Binding.Text[1]))
		}
		if got, _, ok := ParseToastArgs(p.Launch); tag != "" && (!ok || got != tag) {
			t.Fatalf("launch %q reads as %q %v, want %q", p.Launch, got, ok, tag)
		}
		if ask != (p.Actions != nil) {
			t.Fatalf("ask %v but actions %+v", ask, p.Actions)
		}
	})
}

func ExampleNewToast() {
	t := NewToast(Message{
		Tag:     "task-42",
		Title:   "Deploy — needs your OK",
		Body:    `run "rm -rf build" & deploy?`,
		Actions: []string{ActionAllow, ActionDeny},
	})
	fmt.Println(t.Tag, t.Group)
	fmt.Println(t.XML)
	// Output:
	// task-42 tasks
	// <toast launch="action=default&amp;tag=task-42" activationType="foreground" duration="long">
	//   <visual>
	//     <binding template="ToastGeneric">
	//       <text>Deploy — needs your OK</text>
	//       <text>run &#34;rm -rf build&#34; &amp; deploy?</text>
	//     </binding>
	//   </visual>
	//   <actions>
	//     <action content="Allow" arguments="action=allow&amp;tag=task-42" activationType="foreground"></action>
	//     <action content="Deny" arguments="action=deny&amp;tag=task-42" activationType="foreground"></action>
	//   </actions>
	// </toast>
}
