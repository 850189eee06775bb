package tray

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"fyne.io/systray"

	"conch/backend/ask"
	"conch/backend/event"
	"conch/backend/internal/brief"
	"conch/backend/task"
)

// Item is a question waiting for the person, listed in the menu: a task's
// (TaskID) or, with Chat set, a chat's (TaskID holds the chat's id).
type Item struct {
	TaskID string
	Title  string
	Chat   bool
	// AskID is the question's id: an answer from the menu carries it, so
	// one from a menu drawn before the question was settled elsewhere is
	// refused ("" offers no Allow or Deny).
	AskID string
	// Tool and Detail are what the question asks, as ask.Question holds
	// them.
	Tool, Detail string
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
	// Answer allows or denies a question from the menu, through the same
	// path as the page and the notifications' buttons; its error (the
	// question was settled meanwhile: a conflict) is logged.
	Answer func(it Item, allow bool) error
	// Log hears answers that were refused (nil: not logged).
	Log *slog.Logger
	// Quit ends Conch.
	Quit func()
}

// maxItems is how many needs-you tasks the menu lists by name.
const maxItems = 5

// slot is one question's place in the menu: its title, and under it the
// question in full, the warning for a destructive command and the
// answers.
type slot struct {
	item, detail, warning, allow, deny, open *systray.MenuItem
}

// Tray is the running tray icon. There is one per process.
type Tray struct {
	actions Actions

	mu     sync.Mutex
	counts Counts
	drawn  bool
	header *systray.MenuItem
	slots  [maxItems]slot
	menu   Slots

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
		s := &t.slots[i]
		s.item = systray.AddMenuItem("", "")
		s.detail = s.item.AddSubMenuItem("", "")
		s.detail.Disable()
		s.warning = s.item.AddSubMenuItem("", "")
		s.warning.Disable()
		s.allow = s.item.AddSubMenuItem(keyed("_Allow"), "Allow it")
		s.deny = s.item.AddSubMenuItem(keyed("_Deny"), "Deny it")
		s.open = s.item.AddSubMenuItem(keyed("_Open in Conch"), "Open the chat it came from")
		s.item.Hide()
	}
	systray.AddSeparator()
	quit := systray.AddMenuItem("Quit Conch", "Stop Conch and every task it runs")

	// Each menu item's clicks, and what a click does.
	chs := []<-chan struct{}{open.ClickedCh, tasks.ClickedCh, quit.ClickedCh}
	dos := []func(){func() { call(t.actions.Open) }, func() { call(t.actions.Tasks) }, func() { call(t.actions.Quit) }}
	for i := range t.slots {
		s := &t.slots[i]
		chs = append(chs, s.allow.ClickedCh, s.deny.ClickedCh, s.open.ClickedCh)
		dos = append(dos, func() { t.answer(i, true) }, func() { t.answer(i, false) }, func() { t.openSlot(i) })
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.clicks(chs, dos)
	}()
}

func call(f func()) {
	if f != nil {
		f()
	}
}

// clicks routes menu clicks until Stop: a click on chs[i] runs dos[i].
func (t *Tray) clicks(chs []<-chan struct{}, dos []func()) {
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
			dos[i]()
		}
	}
}

// listed is the question menu slot i shows now.
func (t *Tray) listed(i int) Item {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.menu.Items[i]
}

// openSlot shows the chat (or task) of the question in slot i.
func (t *Tray) openSlot(i int) {
	it := t.listed(i)
	switch {
	case it.TaskID == "":
	case it.Chat && t.actions.OpenChat != nil:
		t.actions.OpenChat(it.TaskID)
	case !it.Chat && t.actions.OpenTask != nil:
		t.actions.OpenTask(it.TaskID)
	}
}

// answer allows or denies the question in slot i. It carries the
// question's id: when the question was answered elsewhere since the menu
// was drawn, the task or chat refuses it and the refusal is logged.
func (t *Tray) answer(i int, allow bool) {
	it := t.listed(i)
	if it.TaskID == "" || it.AskID == "" || t.actions.Answer == nil {
		return
	}
	if err := t.actions.Answer(it, allow); err != nil && t.actions.Log != nil {
		t.actions.Log.Info("answer from the tray refused", "id", it.TaskID, "chat", it.Chat, "ask", it.AskID, "err", err)
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
	next := t.menu.Place(needsYou)
	for i := range t.slots {
		s := &t.slots[i]
		it := next.Items[i]
		switch {
		case !next.Shown[i]:
			if t.menu.Shown[i] {
				s.item.Hide()
			}
			continue
		case t.menu.Shown[i] && it == t.menu.Items[i]:
			continue // drawn already: each change is a D-Bus signal
		}
		e := EntryOf(it)
		s.item.SetTitle(menuText(e.Title))
		s.item.SetTooltip(e.Detail)
		s.detail.SetTitle(menuText(e.Detail))
		if e.Warning != "" {
			s.warning.SetTitle(menuText("⚠ " + e.Warning))
			s.warning.Show()
		} else {
			s.warning.Hide()
		}
		if it.AskID != "" {
			s.allow.Show()
			s.deny.Show()
		} else {
			s.allow.Hide()
			s.deny.Hide()
		}
		s.item.Show()
	}
	t.menu = next
}

// Slots says which question each of the menu's question slots holds.
// A click names only a menu item, never the question its label showed,
// and a tray host may show a menu drawn before the last change; so a
// question keeps its slot while it waits, and a freed slot keeps its
// question (hidden) and is the last to be given to a new one. A click
// on a stale menu then answers the question it showed, with that
// question's id, and the task or chat refuses it if it was settled;
// it does not answer whichever question came next. (So the menu lists
// questions in the order they took their slots.)
type Slots struct {
	// Items is each slot's question: the one shown, or the last one
	// shown there when it is hidden.
	Items [maxItems]Item
	// Shown reports whether the slot is in the menu.
	Shown [maxItems]bool
	// freed orders hidden slots: the one freed first (0: never used) is
	// given out first.
	freed [maxItems]uint64
	seq   uint64
}

// Place returns the slots for the questions now waiting (oldest first):
// those listed keep their slots, new ones take the slots freed longest
// ago, and a question with no slot left is only counted.
func (s Slots) Place(needsYou []Item) Slots {
	next := s
	next.Shown = [maxItems]bool{}
	placed := make([]bool, len(needsYou))
	for i := range s.Items {
		if !s.Shown[i] {
			continue
		}
		for j, it := range needsYou {
			if !placed[j] && sameQuestion(it, s.Items[i]) {
				next.Items[i], next.Shown[i], placed[j] = it, true, true
				break
			}
		}
		if !next.Shown[i] {
			next.seq++
			next.freed[i] = next.seq
		}
	}
	var free []int
	for i := range next.Shown {
		if !next.Shown[i] {
			free = append(free, i)
		}
	}
	sort.SliceStable(free, func(a, b int) bool { return next.freed[free[a]] < next.freed[free[b]] })
	for j, it := range needsYou {
		if placed[j] {
			continue
		}
		if len(free) == 0 {
			break
		}
		i := free[0]
		free = free[1:]
		next.Items[i], next.Shown[i] = it, true
	}
	return next
}

// sameQuestion reports whether a and b are one question (its title or
// wording may have changed).
func sameQuestion(a, b Item) bool {
	return a.TaskID == b.TaskID && a.Chat == b.Chat && a.AskID == b.AskID
}

// Entry is how one question reads in the menu.
type Entry struct {
	// Title is its menu item: whose question and what it asks, cut short.
	// A destructive command's starts "⚠ Destructive:".
	Title string
	// Detail is the question in full (cut at maxDetail runes), the first
	// line of its submenu.
	Detail string
	// Warning says why the command is destructive ("" when it is not).
	Warning string
}

// Lengths, in runes, of the parts of a question's menu item.
const (
	maxTitle    = 32
	maxQuestion = 48
	maxDetail   = 120
)

// EntryOf is how a question waiting for the person reads in the menu: in
// plain text, as a menu shows its labels as they are.
func EntryOf(it Item) Entry {
	e := Entry{Warning: ask.Danger(it.Tool, it.Detail)}
	detail := brief.Plain(it.Detail)
	question := brief.FirstLine(detail)
	e.Detail = brief.Clip(strings.Join(strings.Fields(detail), " "), maxDetail)
	if question == "" {
		question = "See what it's asking"
		e.Detail = "It asks for your OK"
	}
	title := brief.Plain(it.Title)
	if title == "" {
		title = "New chat"
	}
	e.Title = brief.Clip(title, maxTitle) + " — " + brief.Clip(question, maxQuestion)
	if e.Warning != "" {
		e.Title = "⚠ Destructive: " + e.Title
	}
	return e
}

// dbusmenu reads an underscore in a label as "the next letter is its key"
// (and "__" as one underscore); Windows and macOS show labels as they are.
var dbusmenu = runtime.GOOS != "windows" && runtime.GOOS != "darwin"

// menuText is s as a menu label shows it: its underscores kept.
func menuText(s string) string {
	if dbusmenu {
		return strings.ReplaceAll(s, "_", "__")
	}
	return s
}

// keyed is a fixed label whose "_" marks its key (on Linux); elsewhere the
// mark is dropped.
func keyed(s string) string {
	if dbusmenu {
		return s
	}
	return strings.Replace(s, "_", "", 1)
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
		case ev := <-sub.C():
			if ev.Type == event.TaskOutput || ev.Type == event.MessageDelta {
				continue // output says nothing the tray shows
			}
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
			it := Item{TaskID: tk.ID, Title: tk.Title}
			if tk.Ask != nil {
				asked[tk.ID] = tk.Ask.AskedAt
				it.AskID, it.Tool, it.Detail = tk.Ask.ID, tk.Ask.Tool, tk.Ask.Detail
			}
			items = append(items, it)
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
