package tray

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"fyne.io/systray"

	"conch/backend/event"
	"conch/backend/internal/sessionbus"
	"conch/backend/task"
)

// Item is a question waiting for the person, listed in the menu: a task's
// (TaskID) or, with Chat set, a chat's (TaskID holds the chat's id).
type Item struct {
	TaskID string
	Title  string
	Chat   bool
}

// Actions are what the icon and its menu do.
type Actions struct {
	// Open brings the window forward (menu "Open Conch", a click on the icon).
	Open func()
	// Tasks opens the tasks page.
	Tasks func()
	// OpenTask opens the chat a task came from.
	OpenTask func(taskID string)
	// OpenChat opens a chat whose question waits.
	OpenChat func(chatID string)
	// Quit ends Conch.
	Quit func()
}

// maxItems is how many needs-you tasks the menu lists by name.
const maxItems = 5

// Tray is the running tray icon. There is one per process.
type Tray struct {
	actions Actions

	mu      sync.Mutex
	counts  Counts
	drawn   bool
	header  *systray.MenuItem
	slots   [maxItems]*systray.MenuItem
	slotIDs [maxItems]Item

	end  func()
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

var started sync.Once

// ErrStarted is returned by Start when this process already has a tray.
var ErrStarted = errors.New("the tray is already running")

// Start shows the icon beside the app's own event loop (Wails): it uses
// systray's external loop and talks D-Bus (StatusNotifierItem) on Linux.
func Start(a Actions) (*Tray, error) {
	var t *Tray
	started.Do(func() {
		t = &Tray{actions: a, done: make(chan struct{})}
		// systray builds the menu on a goroutine of its own; Start returns
		// once it is built, so Update always finds the items.
		built := make(chan struct{})
		start, end := systray.RunWithExternalLoop(func() { t.build(); close(built) }, func() {})
		t.end = end
		start()
		<-built
	})
	if t == nil {
		return nil, ErrStarted
	}
	return t, nil
}

// build makes the menu; systray calls it once the tray is ready.
func (t *Tray) build() {
	t.mu.Lock()
	defer t.mu.Unlock()
	systray.SetIcon(Icon(Counts{}))
	systray.SetTitle("Conch")
	systray.SetTooltip("Conch — " + Label(Counts{}))
	if t.actions.Open != nil {
		systray.SetOnTapped(t.actions.Open)
	}
	open := systray.AddMenuItem("Open Conch", "Bring the Conch window forward")
	tasks := systray.AddMenuItem("Tasks", "Open the tasks page")
	systray.AddSeparator()
	t.header = systray.AddMenuItem("Needs your OK", "")
	t.header.Disable()
	t.header.Hide()
	for i := range t.slots {
		t.slots[i] = systray.AddMenuItem("", "Open the chat it came from")
		t.slots[i].Hide()
	}
	systray.AddSeparator()
	quit := systray.AddMenuItem("Quit Conch", "Stop Conch and every task it runs")

	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		cases := []<-chan struct{}{open.ClickedCh, tasks.ClickedCh, quit.ClickedCh}
		for i := range t.slots {
			cases = append(cases, t.slots[i].ClickedCh)
		}
		t.clicks(cases)
	}()
}

// clicks routes menu clicks until Stop.
func (t *Tray) clicks(chs []<-chan struct{}) {
	merged := make(chan int)
	for i, ch := range chs {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			for {
				select {
				case <-t.done:
					return
				case <-ch:
					select {
					case merged <- i:
					case <-t.done:
						return
					}
				}
			}
		}()
	}
	for {
		select {
		case <-t.done:
			return
		case i := <-merged:
			t.clicked(i)
		}
	}
}

func (t *Tray) clicked(i int) {
	call := func(f func()) {
		if f != nil {
			f()
		}
	}
	switch i {
	case 0:
		call(t.actions.Open)
	case 1:
		call(t.actions.Tasks)
	case 2:
		call(t.actions.Quit)
	default:
		t.mu.Lock()
		it := t.slotIDs[i-3]
		t.mu.Unlock()
		switch {
		case it.TaskID == "":
		case it.Chat && t.actions.OpenChat != nil:
			t.actions.OpenChat(it.TaskID)
		case !it.Chat && t.actions.OpenTask != nil:
			t.actions.OpenTask(it.TaskID)
		}
	}
}

// Update redraws the icon and the menu for the counts and the tasks that
// need the person (oldest first).
func (t *Tray) Update(c Counts, needsYou []Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.drawn || c != t.counts {
		systray.SetIcon(Icon(c))
		title := "Conch"
		if c != (Counts{}) {
			title = Label(c)
		}
		systray.SetTitle(title)
		systray.SetTooltip("Conch — " + Label(c))
		t.counts, t.drawn = c, true
	}
	if len(needsYou) == 0 {
		t.header.Hide()
	} else {
		t.header.SetTitle("Needs your OK (" + itoa(len(needsYou)) + ")")
		t.header.Show()
	}
	for i, slot := range t.slots {
		if i < len(needsYou) {
			slot.SetTitle(needsYou[i].Title + " — See what it's asking")
			slot.Show()
			t.slotIDs[i] = needsYou[i]
			continue
		}
		slot.Hide()
		t.slotIDs[i] = Item{}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Follow keeps the tray current with the tasks (and the chats' questions,
// when questions is not nil) until ctx ends: it recounts after every
// change, at most every 200 ms.
func (t *Tray) Follow(ctx context.Context, bus *event.Bus, list func() []task.Task, questions func() []Item) {
	refresh := func() {
		c, items := Summarise(list())
		if questions != nil {
			q := questions()
			c.NeedsYou += len(q)
			items = append(items, q...)
		}
		t.Update(c, items)
	}
	refresh()
	for ctx.Err() == nil && !bus.Closed() {
		sub := bus.Subscribe(64)
		t.follow(ctx, sub, refresh)
		sub.Close()
		refresh() // dropped or done: catch up from the list
	}
}

func (t *Tray) follow(ctx context.Context, sub *event.Subscription, refresh func()) {
	tick := time.NewTimer(time.Hour)
	tick.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.done:
			return
		case <-sub.Done():
			return
		case <-sub.C():
			if !pending {
				pending = true
				tick.Reset(200 * time.Millisecond)
			}
		case <-tick.C:
			pending = false
			refresh()
		}
	}
}

// Summarise counts tasks for the tray and lists the ones that need the
// person, oldest question first.
func Summarise(tasks []task.Task) (Counts, []Item) {
	var c Counts
	var items []Item
	asked := map[string]time.Time{}
	for _, tk := range tasks {
		switch tk.Status {
		case task.Running:
			c.Working++
		case task.NeedsYou:
			c.NeedsYou++
			items = append(items, Item{TaskID: tk.ID, Title: tk.Title})
			if tk.Ask != nil {
				asked[tk.ID] = tk.Ask.AskedAt
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return asked[items[i].TaskID].Before(asked[items[j].TaskID]) })
	return c, items
}

// Stop removes the icon and ends the click loop; safe twice.
func (t *Tray) Stop() {
	t.once.Do(func() {
		close(t.done)
		t.end()
		t.wg.Wait()
	})
}

// HostPresent reports whether a tray host (StatusNotifierWatcher) runs on
// the session bus, for the doctor.
func HostPresent() (bool, string) {
	conn, err := sessionbus.Connect()
	if err != nil {
		return false, "no D-Bus session bus"
	}
	defer conn.Close()
	var owner string
	err = conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, "org.kde.StatusNotifierWatcher").Store(&owner)
	if err != nil || owner == "" {
		return false, "no tray host (StatusNotifierWatcher) on the session bus"
	}
	return true, "a tray host is present"
}
