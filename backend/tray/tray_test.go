package tray

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	_ "unsafe" // go:linkname, for systrayServedLayout

	"github.com/godbus/dbus/v5"

	"conch/backend/ask"
	"conch/backend/event"
	"conch/backend/task"
	"conch/backend/testrig/dbustest"
)

func TestLabel(t *testing.T) {
	cases := map[Counts]string{
		{}:                        "Nothing running",
		{Working: 2}:              "2 working",
		{NeedsYou: 1}:             "1 needs your OK",
		{Working: 2, NeedsYou: 1}: "2 working · 1 needs your OK",
	}
	for c, want := range cases {
		if got := Label(c); got != want {
			t.Errorf("Label(%+v) = %q, want %q", c, got, want)
		}
	}
}

// pixel decodes a PNG icon and returns the colour at (x, y).
func pixel(t *testing.T, b []byte, x, y int) (r, g, bl uint8) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, iconSize, iconSize) {
		t.Fatalf("icon is %v", img.Bounds())
	}
	r32, g32, b32, _ := img.At(x, y).RGBA()
	return uint8(r32 >> 8), uint8(g32 >> 8), uint8(b32 >> 8)
}

func TestIconBadgeShowsNeedsYouFirstInAmber(t *testing.T) {
	// The badge's edge, inside its circle but clear of the digits.
	bx, by := iconSize-badgeDiameter/2, 3
	if r, g, b := pixel(t, Icon(Counts{}), bx, by); r+g+b != 0 {
		t.Fatalf("no badge expected, got %d,%d,%d", r, g, b)
	}
	if r, g, b := pixel(t, Icon(Counts{Working: 3}), bx, by); r != blue.R || g != blue.G || b != blue.B {
		t.Fatalf("working badge is %d,%d,%d", r, g, b)
	}
	if r, g, b := pixel(t, Icon(Counts{Working: 3, NeedsYou: 1}), bx, by); r != amber.R || g != amber.G || b != amber.B {
		t.Fatalf("needs-you badge is %d,%d,%d", r, g, b)
	}
	if bytes.Equal(Icon(Counts{Working: 1}), Icon(Counts{Working: 2})) {
		t.Fatal("the count is not drawn")
	}
	if bytes.Equal(Icon(Counts{Working: 12}), Icon(Counts{Working: 10})) == false {
		t.Fatal("counts over 9 should all read 9+")
	}
}

func TestSummarise(t *testing.T) {
	now := time.Now()
	c, items := Summarise([]task.Task{
		{ID: "a", Status: task.Running},
		{ID: "b", Status: task.NeedsYou, Title: "B", Ask: &ask.Question{ID: "q-b", Tool: "run_command", Detail: "npm test", AskedAt: now}},
		{ID: "c", Status: task.NeedsYou, Title: "C", Ask: &ask.Question{AskedAt: now.Add(-time.Minute)}},
		{ID: "d", Status: task.Queued},
		{ID: "e", Status: task.Done},
	})
	if c != (Counts{Working: 1, NeedsYou: 2}) {
		t.Fatalf("counts %+v", c)
	}
	if len(items) != 2 || items[0].TaskID != "c" || items[1].TaskID != "b" {
		t.Fatalf("items %+v (want oldest question first)", items)
	}
	if want := (Item{TaskID: "b", Title: "B", AskID: "q-b", Tool: "run_command", Detail: "npm test"}); items[1] != want {
		t.Fatalf("item %+v, want %+v: the question's id and what it asks", items[1], want)
	}
}

func TestEntryOf(t *testing.T) {
	long := strings.Repeat("x", 200)
	cases := []struct {
		name string
		it   Item
		want Entry
	}{
		{"a command", Item{TaskID: "t", Title: "Run the tests", AskID: "q", Tool: "run_command", Detail: "Run `npm test` in ~/proj"},
			Entry{Title: "Run the tests — Run npm test in ~/proj", Detail: "Run npm test in ~/proj"}},
		{"a destructive command", Item{TaskID: "t", Title: "Tidy up", AskID: "q", Tool: "run_command", Detail: "Run `rm -rf build` in ~/proj"},
			Entry{Title: "⚠ Destructive: Tidy up — Run rm -rf build in ~/proj", Detail: "Run rm -rf build in ~/proj",
				Warning: "It deletes files and folders for good (rm -r), without asking again."}},
		{"a force push by a coding agent", Item{TaskID: "t", Title: "Ship", AskID: "q", Tool: "Bash", Detail: "git push --force origin main"},
			Entry{Title: "⚠ Destructive: Ship — git push --force origin main", Detail: "git push --force origin main",
				Warning: "It force-pushes: the remote's history is rewritten and others' commits there can be lost."}},
		{"a file write is not a command", Item{TaskID: "t", Title: "Docs", AskID: "q", Tool: "write_file", Detail: "Write README.md\n(rm -rf is mentioned)"},
			Entry{Title: "Docs — Write README.md", Detail: "Write README.md (rm -rf is mentioned)"}},
		{"long parts are cut", Item{TaskID: "t", Title: long, Detail: long},
			Entry{Title: strings.Repeat("x", maxTitle-1) + "… — " + strings.Repeat("x", maxQuestion-1) + "…", Detail: strings.Repeat("x", maxDetail-1) + "…"}},
		{"Markdown is shown as plain text", Item{TaskID: "t", Title: "Fix **the** `build`", AskID: "q", Tool: "write_file", Detail: "Edit `__init__.py`?"},
			Entry{Title: "Fix the build — Edit __init__.py?", Detail: "Edit __init__.py?"}},
		{"a chat with no title or detail", Item{TaskID: "c", Chat: true},
			Entry{Title: "New chat — See what it's asking", Detail: "It asks for your OK"}},
	}
	for _, c := range cases {
		if got := EntryOf(c.it); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestSlotsKeepAQuestionWhereItWasShown(t *testing.T) {
	q := func(id string) Item { return Item{TaskID: "t-" + id, Title: id, AskID: "ask-" + id} }
	var s Slots
	s = s.Place([]Item{q("a"), q("b"), q("c")})
	want := func(s Slots, slots ...string) {
		t.Helper()
		for i := range maxItems {
			got := ""
			if s.Shown[i] {
				got = s.Items[i].Title
			}
			if got != slots[i] {
				t.Fatalf("slot %d holds %q, want %q (slots %+v)", i, got, slots[i], s)
			}
		}
	}
	want(s, "a", "b", "c", "", "")

	// b is answered and d asks: d does not take b's slot, which a stale
	// menu may still show, and b stays there, hidden, so a click on it
	// answers b (and is refused).
	s = s.Place([]Item{q("a"), q("c"), q("d")})
	want(s, "a", "", "c", "d", "")
	if s.Items[1] != q("b") {
		t.Fatalf("the freed slot forgot its question: %+v", s.Items[1])
	}

	// A question's new wording is drawn in its own slot.
	renamed := q("c")
	renamed.Title = "c renamed"
	s = s.Place([]Item{q("a"), renamed, q("d")})
	want(s, "a", "", "c renamed", "d", "")

	// Slots are given out freed longest ago first; past the last, a
	// question is only counted.
	s = s.Place([]Item{q("e"), q("f"), q("g"), q("h"), q("i"), q("j")})
	want(s, "g", "f", "h", "i", "e")
	// The same question asked again (a new id) is a new question.
	again := q("e")
	again.AskID = "ask-e2"
	s = s.Place([]Item{again})
	if s.Shown[4] || !s.Shown[0] || s.Items[0] != again {
		t.Fatalf("a new question reused the slot of the one it replaced: %+v", s)
	}
}

func TestMenuTextKeepsUnderscores(t *testing.T) {
	if !dbusmenu {
		t.Skip("labels are shown as they are here")
	}
	if got := menuText("rm -rf node_modules"); got != "rm -rf node__modules" {
		t.Fatalf("menuText = %q: dbusmenu would take the underscore for a key", got)
	}
	if got := keyed("_Allow"); got != "_Allow" {
		t.Fatalf("keyed = %q", got)
	}
}

// watcher is a fake org.kde.StatusNotifierWatcher recording who registered.
type watcher struct {
	mu    sync.Mutex
	items []string // the bus names of registered items
}

func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items = append(w.items, string(sender))
	return nil
}

func (w *watcher) RegisterStatusNotifierHost(service string) *dbus.Error { return nil }

func (w *watcher) registered() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.items...)
}

// The real systray item on a private bus: its title, tooltip and icon
// follow the task counts.
func TestTrayFollowsTasksOverDBus(t *testing.T) {
	// systray v1.12.2 answers its first GetLayout one level deep and, 150 ms
	// later, bumps the menu's revision from a goroutine that does not take
	// the lock GetLayout reads it under: a data race inside systray, which
	// -race reports whenever a host (here this test) asks for the menu. It
	// is harmless to the app (a revision read stale once); the test marks
	// that first answer as served, so the race detector watches only Conch.
	systrayServedLayout = true
	addr := dbustest.Start(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	conn := dbustest.Connect(t, addr)
	w := &watcher{}
	if err := conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the watcher name: %v %v", reply, err)
	}
	host, err := WatchSessionHost()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if ok, _ := host.State(); !ok {
		t.Fatal("the host's State does not see the watcher")
	}

	// Answers from the menu reach this, as they would the runner and the
	// chats: a second answer to one question is refused, as theirs is.
	type answered struct {
		it    Item
		allow bool
	}
	answers := make(chan answered, 4)
	var answeredMu sync.Mutex
	settled := map[string]bool{}
	answer := func(it Item, allow bool) error {
		answeredMu.Lock()
		defer answeredMu.Unlock()
		if settled[it.AskID] {
			return errors.New("that question is no longer waiting for an answer: conflict")
		}
		settled[it.AskID] = true
		answers <- answered{it, allow}
		return nil
	}
	var logged syncBuffer
	tr, err := Start(Actions{Answer: answer, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Stop()
	if _, err := Start(Actions{}); err != ErrStarted {
		t.Fatalf("second tray: %v", err)
	}

	var item string
	deadline := time.Now().Add(10 * time.Second)
	for item == "" {
		if r := w.registered(); len(r) > 0 {
			item = r[0]
		} else if time.Now().After(deadline) {
			t.Fatal("the tray never registered with the watcher")
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	obj := conn.Object(item, "/StatusNotifierItem")
	get := func(name string) dbus.Variant {
		t.Helper()
		v, err := obj.GetProperty("org.kde.StatusNotifierItem." + name)
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return v
	}
	tooltip := func() string {
		var tt struct {
			Name  string
			Icons []struct {
				W, H int32
				Pix  []byte
			}
			Title, Description string
		}
		if err := get("ToolTip").Store(&tt); err != nil {
			t.Fatal(err)
		}
		return tt.Title
	}
	icon := func() []byte {
		var px []struct {
			W, H int32
			Pix  []byte
		}
		if err := get("IconPixmap").Store(&px); err != nil || len(px) != 1 {
			t.Fatalf("icon pixmap: %v %d", err, len(px))
		}
		return px[0].Pix
	}
	// waitTitle polls: systray publishes property changes asynchronously.
	waitTitle := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			var title string
			_ = get("Title").Store(&title)
			if title == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("title %q, want %q", title, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	bus := event.NewBus()
	defer bus.Close()
	var mu sync.Mutex
	tasks := []task.Task{}
	list := func() []task.Task { mu.Lock(); defer mu.Unlock(); return append([]task.Task(nil), tasks...) }
	var questions []Item
	chatQuestions := func() []Item { mu.Lock(); defer mu.Unlock(); return append([]Item(nil), questions...) }
	// set changes the tasks, lets Follow pick the change up from the bus,
	// and stops it before D-Bus is read: systray's property store is not
	// safe to read while SetIcon runs.
	set := func(want Counts, ts ...task.Task) {
		t.Helper()
		mu.Lock()
		tasks = ts
		mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { tr.Follow(ctx, bus, list, chatQuestions); close(done) }()
		bus.Publish(event.Event{Type: event.TaskChanged, Task: &task.Task{}})
		deadline := time.Now().Add(5 * time.Second)
		for {
			tr.mu.Lock()
			got := tr.counts
			tr.mu.Unlock()
			if got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tray counts %+v, want %+v", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
	}
	set(Counts{})
	waitTitle("Conch")
	if got := tooltip(); got != "Conch — Nothing running" {
		t.Fatalf("tooltip %q", got)
	}
	idle := icon()

	set(Counts{Working: 2}, task.Task{ID: "a", Status: task.Running}, task.Task{ID: "b", Status: task.Running})
	waitTitle("2 working")
	if got := tooltip(); got != "Conch — 2 working" {
		t.Fatalf("tooltip %q", got)
	}
	working := icon()
	if bytes.Equal(idle, working) {
		t.Fatal("the icon did not change with the count")
	}

	clean := task.Task{ID: "b", Status: task.NeedsYou, Title: "Clean", Ask: &ask.Question{ID: "q1", Tool: "run_command", Detail: "Run `rm -rf build` in ~/proj"}}
	set(Counts{Working: 1, NeedsYou: 1}, task.Task{ID: "a", Status: task.Running}, clean)
	waitTitle("1 working · 1 needs your OK")
	if got := tooltip(); got != "Conch — 1 working · 1 needs your OK" {
		t.Fatalf("tooltip %q", got)
	}
	// A chat's question counts too, and is listed after the tasks'.
	mu.Lock()
	chatQ := Item{TaskID: "chat-1", Title: "Fix the build", Chat: true, AskID: "c1", Tool: "write_file", Detail: "Write notes.md"}
	questions = []Item{chatQ}
	mu.Unlock()
	set(Counts{Working: 1, NeedsYou: 2}, task.Task{ID: "a", Status: task.Running}, clean)
	waitTitle("1 working · 2 needs your OK")
	tr.mu.Lock()
	slot := tr.menu.Items[1]
	tr.mu.Unlock()
	if slot != chatQ {
		t.Fatalf("second menu slot %+v, want the chat's question", slot)
	}
	// The question's item is marked destructive, and a click on its Allow
	// answers that question, by its id.
	menu := conn.Object(item, "/StatusNotifierItem/menu")
	q := findItem(t, menu, "⚠ Destructive: Clean — Run rm -rf build in ~/proj")
	if q == nil {
		t.Fatal("no menu item for the task's question")
	}
	if w := childLabelled(q, "⚠ It deletes files and folders for good (rm -r), without asking again."); w == nil || !visible(w) {
		t.Fatalf("no warning under the destructive question: %+v", q)
	}
	allow := childLabelled(q, "_Allow")
	if allow == nil {
		t.Fatalf("no Allow under the question: %+v", q)
	}
	click := func(m *menuItem) {
		t.Helper()
		if err := menu.Call("com.canonical.dbusmenu.Event", 0, m.ID, "clicked", dbus.MakeVariant(""), uint32(0)).Err; err != nil {
			t.Fatal(err)
		}
	}
	click(allow)
	select {
	case a := <-answers:
		if a.it.TaskID != "b" || a.it.AskID != "q1" || a.it.Chat || !a.allow {
			t.Fatalf("answered %+v", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a click on Allow answered nothing")
	}
	// The menu still shows the question (nothing redrew it): a second
	// click is refused, and the refusal is logged, not fatal.
	click(childLabelled(q, "_Deny"))
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logged.String(), "answer from the tray refused"); {
		if time.Now().After(deadline) {
			t.Fatalf("the stale answer was not logged: %q", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logged.String(), "ask=q1") {
		t.Fatalf("log %q does not name the question", logged.String())
	}
	// The chat's question is answered with the chat's id.
	c := findItem(t, menu, "Fix the build — Write notes.md")
	if c == nil {
		t.Fatal("no menu item for the chat's question")
	}
	if warned(c) {
		t.Fatal("an ordinary question shows a warning")
	}
	click(childLabelled(c, "_Deny"))
	select {
	case a := <-answers:
		if a.it != chatQ || a.allow {
			t.Fatalf("answered %+v", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a click on Deny answered nothing")
	}
	// The pixmap is ARGB: the badge's edge pixel is amber.
	pix := icon()
	i := (3*iconSize + iconSize - badgeDiameter/2) * 4
	if pix[i+1] != amber.R || pix[i+2] != amber.G || pix[i+3] != amber.B {
		t.Fatalf("badge pixel %v, want amber", pix[i:i+4])
	}

	// The task's question is gone and another task asks. A host may still
	// show the menu as it was: a click there on the old question's Deny
	// answers the old question (refused), not the new one.
	mu.Lock()
	questions = []Item{chatQ}
	mu.Unlock()
	deploy := task.Task{ID: "d", Status: task.NeedsYou, Title: "Deploy", Ask: &ask.Question{ID: "q2", Tool: "run_command", Detail: "Run `make deploy`"}}
	set(Counts{NeedsYou: 2}, task.Task{ID: "a", Status: task.Done}, deploy)
	click(childLabelled(q, "_Deny"))
	for deadline := time.Now().Add(5 * time.Second); strings.Count(logged.String(), "answer from the tray refused") < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the click on the stale menu was not refused: %q", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case a := <-answers:
		t.Fatalf("a click on a stale menu answered %+v", a)
	default:
	}
	if findItem(t, menu, "⚠ Destructive: Clean — Run rm -rf build in ~/proj") != nil {
		t.Fatal("the settled question is still in the menu")
	}
	d := findItem(t, menu, "Deploy — Run make deploy")
	if d == nil {
		t.Fatal("no menu item for the new question")
	}
	if warned(d) {
		t.Fatal("the new, ordinary question shows a warning")
	}
	click(childLabelled(d, "_Allow"))
	select {
	case a := <-answers:
		if a.it.TaskID != "d" || a.it.AskID != "q2" || !a.allow {
			t.Fatalf("answered %+v", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a click on the new question's Allow answered nothing")
	}
}

// syncBuffer is a log's output, read while the tray writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// menuItem is one item of a dbusmenu layout.
type menuItem struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []*menuItem
}

func (m *menuItem) label() string {
	s, _ := m.Props["label"].Value().(string)
	return s
}

func visible(m *menuItem) bool {
	v, ok := m.Props["visible"].Value().(bool)
	return !ok || v
}

// warned reports whether a question's submenu shows a warning.
func warned(m *menuItem) bool {
	for _, c := range m.Children {
		if strings.HasPrefix(c.label(), "⚠") && visible(c) {
			return true
		}
	}
	return false
}

func childLabelled(m *menuItem, label string) *menuItem {
	for _, c := range m.Children {
		if c.label() == label {
			return c
		}
	}
	return nil
}

// systrayServedLayout is systray's own "first GetLayout served" mark
// (see TestTrayFollowsTasksOverDBus).
//
//go:linkname systrayServedLayout fyne.io/systray.firstGetLayoutDone
var systrayServedLayout bool

// findItem reads the whole menu over D-Bus and returns the visible
// top-level item labelled label (as the menu shows it: menuText).
func findItem(t *testing.T, menu dbus.BusObject, label string) *menuItem {
	t.Helper()
	var rev uint32
	var layout struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	if err := menu.Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &layout); err != nil {
		t.Fatal(err)
	}
	root := &menuItem{ID: layout.ID, Props: layout.Props, Children: children(t, layout.Children)}
	for _, c := range root.Children {
		if c.label() == menuText(label) && visible(c) {
			return c
		}
	}
	var seen []string
	for _, c := range root.Children {
		seen = append(seen, c.label())
	}
	t.Logf("menu items: %q", seen)
	return nil
}

func children(t *testing.T, vs []dbus.Variant) []*menuItem {
	t.Helper()
	var out []*menuItem
	for _, v := range vs {
		f, ok := v.Value().([]any)
		if !ok || len(f) != 3 {
			t.Fatalf("menu layout item %v", v)
		}
		id, _ := f[0].(int32)
		props, _ := f[1].(map[string]dbus.Variant)
		kids, _ := f[2].([]dbus.Variant)
		out = append(out, &menuItem{ID: id, Props: props, Children: children(t, kids)})
	}
	return out
}
