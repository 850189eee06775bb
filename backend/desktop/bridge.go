package desktop

import (
	"context"

	"conch/backend/event"
)

// bridge forwards every event on bus to emit until ctx is done or the bus is
// closed. When the bus drops the subscription (the page fell behind) it
// resubscribes and emits reloadEvent so the page reloads what it shows.
func bridge(ctx context.Context, bus *event.Bus, emit func(any)) {
	for dropped := false; ; dropped = true {
		sub := bus.Subscribe(bridgeBuffer)
		if dropped {
			if ended(sub) {
				return // the bus was closed while we caught up
			}
			emit(reloadEvent)
		}
		n, ok := pump(ctx, sub, emit)
		sub.Close()
		// The bus drops a subscriber only when its buffer is full, so a
		// subscription that ended without one event was ended by Bus.Close.
		if !ok || n == 0 {
			return
		}
	}
}

// pump emits events from sub until sub ends (ok) or ctx is done (!ok), and
// counts them.
func pump(ctx context.Context, sub *event.Subscription, emit func(any)) (n int, ok bool) {
	for {
		select {
		case <-ctx.Done():
			return n, false
		case ev := <-sub.C():
			emit(ev)
			n++
		case <-sub.Done():
			// What was buffered before the drop is still in order; show it.
			for {
				select {
				case ev := <-sub.C():
					emit(ev)
					n++
				default:
					return n, true
				}
			}
		}
	}
}

// ended reports whether sub is already over and holds nothing.
func ended(sub *event.Subscription) bool {
	select {
	case <-sub.Done():
		return len(sub.C()) == 0
	default:
		return false
	}
}
