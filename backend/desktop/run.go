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

// singleInstanceID names the lock that keeps one Conch window per user.
const singleInstanceID = "dev.conch.desktop.6b0f6a1e"

// background matches the page's light background, so the window does not
// flash another colour before the page paints.
var background = &options.RGBA{R: 255, G: 255, B: 255, A: 255}

// Run opens the window and blocks until it is closed.
func Run(o Options) error {
	var (
		mu      sync.Mutex
		winCtx  context.Context
		stop    context.CancelFunc
		stopped = make(chan struct{})
	)
	startup := func(ctx context.Context) {
		mu.Lock()
		winCtx = ctx
		mu.Unlock()
		if o.OnStartup != nil {
			o.OnStartup(ctx)
		}
		bctx, cancel := context.WithCancel(ctx)
		mu.Lock()
		stop = cancel
		mu.Unlock()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			quitOnSignal(bctx)
		}()
		if o.Events != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bridge(bctx, o.Events, func(v any) { runtime.EventsEmit(ctx, EventName, v) })
			}()
		}
		go func() {
			wg.Wait()
			close(stopped)
		}()
	}
	shutdown := func(ctx context.Context) {
		mu.Lock()
		cancel := stop
		mu.Unlock()
		if cancel != nil {
			cancel()
			<-stopped
		}
		if o.OnShutdown != nil {
			o.OnShutdown(ctx)
		}
	}
	secondInstance := func(options.SecondInstanceData) {
		mu.Lock()
		ctx := winCtx
		mu.Unlock()
		if ctx == nil {
			return
		}
		runtime.WindowUnminimise(ctx)
		runtime.Show(ctx)
	}

	err := wails.Run(&options.App{
		Title:            o.Title,
		Width:            1200,
		Height:           800,
		MinWidth:         720,
		MinHeight:        480,
		BackgroundColour: background,
		AssetServer:      &assetserver.Options{Assets: o.Assets},
		Bind:             o.Bind,
		OnStartup:        startup,
		OnShutdown:       shutdown,
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId:               singleInstanceID,
			OnSecondInstanceLaunch: secondInstance,
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

// quitOnSignal closes the window on SIGINT or SIGTERM, so `kill` ends Conch
// through OnShutdown like the close button does. It returns when ctx ends.
func quitOnSignal(ctx context.Context) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case <-sig:
		runtime.Quit(ctx)
	case <-ctx.Done():
	}
}
