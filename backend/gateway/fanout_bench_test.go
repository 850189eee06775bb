package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"conch/backend/event"
	"conch/backend/task"
)

// fanOut is how many clients follow the changes in the fan-out benchmarks.
const fanOut = 100

// benchTask is the change both fan-out benchmarks deliver.
var benchTask = task.Task{ID: "6f1c2a34-0e7b-4c1d-9a4e-2b5f8c7d9e10", Kind: task.Background, Status: task.Running,
	Title: "Run the unit tests", Text: "go test ./...", Provider: "shell", Mode: task.Auto, Steps: []string{"Started go test ./..."}, Rev: 3}

// reportWaits reports the 50th and 99th percentile of the waits.
func reportWaits(b *testing.B, waits []time.Duration) {
	if len(waits) == 0 {
		return
	}
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100])/float64(time.Millisecond), "p99-ms")
}

// BenchmarkFanOut100 is one task change published and read by 100
// WebSocket clients of the gateway: the time until the last has it.
func BenchmarkFanOut100(b *testing.B) {
	e := setup(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := strings.TrimPrefix(e.base, "http://127.0.0.1:")
	got := make(chan struct{}, fanOut)
	var wg sync.WaitGroup
	for range fanOut {
		conn, _, err := websocket.Dial(ctx, wsURL(e), &websocket.DialOptions{HTTPHeader: http.Header{
			"Authorization": {"Bearer " + token}, "Origin": {"http://127.0.0.1:" + port},
		}})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.CloseNow()
		wg.Go(func() {
			for {
				_, data, err := conn.Read(ctx)
				if err != nil {
					return
				}
				var ev event.Event
				if json.Unmarshal(data, &ev) == nil && ev.Type == event.TaskChanged {
					got <- struct{}{}
				}
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // every stream subscribed
	waits := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		c := benchTask
		began := time.Now()
		e.bus.Publish(event.Event{Type: event.TaskChanged, Task: &c})
		for range fanOut {
			<-got
		}
		waits = append(waits, time.Since(began))
	}
	b.StopTimer()
	reportWaits(b, waits)
	cancel()
	wg.Wait()
}

// BenchmarkRawFanOut100 is the limit of BenchmarkFanOut100: the same
// bytes written to 100 loopback TCP connections and read on their other
// ends, one line each.
func BenchmarkRawFanOut100(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c := benchTask
	line, _ := json.Marshal(event.Event{Type: event.TaskChanged, Task: &c})
	line = append(line, '\n')
	got := make(chan struct{}, fanOut)
	var servers []net.Conn
	var wg sync.WaitGroup
	for range fanOut {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		server, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer server.Close()
		servers = append(servers, server)
		wg.Go(func() {
			r := bufio.NewReader(client)
			for {
				if _, err := r.ReadBytes('\n'); err != nil {
					return
				}
				got <- struct{}{}
			}
		})
	}
	waits := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		for _, s := range servers {
			if _, err := s.Write(line); err != nil {
				b.Fatal(err)
			}
		}
		for range fanOut {
			<-got
		}
		waits = append(waits, time.Since(began))
	}
	b.StopTimer()
	reportWaits(b, waits)
	for _, s := range servers {
		s.Close()
	}
	wg.Wait()
}
