package tray

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"conch/backend/ask"
	"conch/backend/event"
	"conch/backend/internal/dbustest"
	"conch/backend/task"
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
		{ID: "b", Status: task.NeedsYou, Title: "B", Ask: &ask.Question{AskedAt: now}},
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
	if ok, _ := HostPresent(); !ok {
		t.Fatal("HostPresent does not see the watcher")
	}

	tr, err := Start(Actions{})
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

	set(Counts{Working: 1, NeedsYou: 1}, task.Task{ID: "a", Status: task.Running}, task.Task{ID: "b", Status: task.NeedsYou, Title: "Clean", Ask: &ask.Question{}})
	waitTitle("1 working · 1 needs your OK")
	if got := tooltip(); got != "Conch — 1 working · 1 needs your OK" {
		t.Fatalf("tooltip %q", got)
	}
	// A chat's question counts too, and is listed after the tasks'.
	mu.Lock()
	questions = []Item{{TaskID: "chat-1", Title: "Fix the build", Chat: true}}
	mu.Unlock()
	set(Counts{Working: 1, NeedsYou: 2}, task.Task{ID: "a", Status: task.Running}, task.Task{ID: "b", Status: task.NeedsYou, Title: "Clean", Ask: &ask.Question{}})
	waitTitle("1 working · 2 needs your OK")
	tr.mu.Lock()
	slot := tr.slotIDs[1]
	tr.mu.Unlock()
	if slot != (Item{TaskID: "chat-1", Title: "Fix the build", Chat: true}) {
		t.Fatalf("second menu slot %+v, want the chat's question", slot)
	}
	// The pixmap is ARGB: the badge's edge pixel is amber.
	pix := icon()
	i := (3*iconSize + iconSize - badgeDiameter/2) * 4
	if pix[i+1] != amber.R || pix[i+2] != amber.G || pix[i+3] != amber.B {
		t.Fatalf("badge pixel %v, want amber", pix[i:i+4])
	}
}
