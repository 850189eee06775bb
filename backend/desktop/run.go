//go:build desktop

package desktop

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"
)

// appIcon is the Linux window icon, drawn by scripts/icon (a copy of
// build/appicon.png at 256 px: embed cannot reach parent folders).
//
//go:embed appicon.png
var appIcon []byte

// background matches the page's light background, so the window does not
// flash another colour before the page paints.
var background = &options.RGBA{R: 255, G: 255, B: 255, A: 255}

// quitRetry is how often a signalled quit is repeated while the page has
// not loaded: GTK drops a quit that arrives before its main loop runs. Once
// the page is up the main loop runs, and one quit is enough; another one
// while GTK tears the window down (Wails quits on the signal too, and a
// slow shutdown outlasts quitRetry) crashed it.
const quitRetry = 500 * time.Millisecond

// window holds what the Wails callbacks share. Wails calls OnStartup on its
// own goroutine, possibly after OnShutdown when start-up fails, hence the lock.
type window struct {
	o       Options
	mu      sync.Mutex
	ctx     context.Context // the Wails context, set at start-up
	closing bool            // shutdown began: start nothing more
	stop    context.CancelFunc
	wg      sync.WaitGroup // goroutines started at start-up
	closed  chan struct{}  // closed when shutdown begins
	loaded  chan struct{}  // closed when the page has loaded (the main loop runs)
	once    sync.Once      // closes loaded
}

// Run opens the window and blocks until it is closed, by the user or by
// SIGINT/SIGTERM.
func Run(o Options) error {
	w := &window{o: o, closed: make(chan struct{}), loaded: make(chan struct{})}

	// Listen before the window exists so an early SIGTERM is not lost.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	quitDone := make(chan struct{})
	defer func() { <-quitDone }()
	go func() {
		defer close(quitDone)
		w.quitOnSignal(sig)
	}()
	defer w.stopAll() // when wails.Run fails before it calls OnShutdown

	err := wails.Run(&options.App{
		Title:            o.Title,
		Width:            1200,
		Height:           800,
		MinWidth:         720,
		MinHeight:        480,
		BackgroundColour: background,
		AssetServer:      &assetserver.Options{Assets: o.Assets},
		Bind:             o.Bind,
		ErrorFormatter:   o.FormatError,
		OnStartup:        w.startup,
		OnDomReady:       func(context.Context) { w.once.Do(func() { close(w.loaded) }) },
		OnShutdown:       w.shutdown,
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId:               singleInstanceID,
			OnSecondInstanceLaunch: w.secondInstance,
		},
		Linux: &linux.Options{
			Icon:        appIcon,
			ProgramName: "conch",
			// Wails picks "never" itself when Linux options are nil: GPU
			// compositing leaves the page blank on some drivers and under Xvfb.
			WebviewGpuPolicy: linux.WebviewGpuPolicyNever,
		},
	})
	if err != nil {
		return fmt.Errorf("desktop: run window: %w", err)
	}
	return nil
}

// startup runs the caller's OnStartup and then the event bridge, which lives
// until shutdown.
func (w *window) startup(ctx context.Context) {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	if w.o.OnStartup != nil {
		w.o.OnStartup(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return
	}
	bctx, cancel := context.WithCancel(ctx)
	w.stop = cancel
	if w.o.Events != nil {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			bridge(bctx, w.o.Events, func(v any) { runtime.EventsEmit(ctx, EventName, v) })
		}()
	}
	w.extras(bctx, ctx)
}

// shutdown stops what startup started, then runs the caller's OnShutdown.
func (w *window) shutdown(ctx context.Context) {
	if w.stopAll() && w.o.OnShutdown != nil {
		w.o.OnShutdown(ctx)
	}
}

// stopAll stops what startup started and waits for it. Only the first call
// does anything; it reports whether it was that call.
func (w *window) stopAll() bool {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return false
	}
	w.closing = true
	close(w.closed)
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	w.wg.Wait()
	return true
}

// quitOnSignal closes the window on SIGINT or SIGTERM, so `kill` ends Conch
// through OnShutdown like the close button does. It returns once shutdown began.
func (w *window) quitOnSignal(sig <-chan os.Signal) {
	select {
	case <-sig:
	case <-w.closed:
		return
	}
	t := time.NewTicker(quitRetry)
	defer t.Stop()
	for {
		w.mu.Lock()
		ctx := w.ctx
		w.mu.Unlock()
		select {
		case <-w.loaded:
			if ctx != nil {
				runtime.Quit(ctx) // the main loop runs: once is enough
			}
			return
		default:
		}
		if ctx != nil {
			runtime.Quit(ctx)
		}
		select {
		case <-w.closed:
			return
		case <-w.loaded:
		case <-t.C:
		}
	}
}

// secondInstance brings the window forward when Conch is started again.
func (w *window) secondInstance(options.SecondInstanceData) {
	w.mu.Lock()
	ctx := w.ctx
	w.mu.Unlock()
	if ctx == nil {
		return
	}
	runtime.WindowUnminimise(ctx)
	runtime.Show(ctx)
}
