//go:build linux

package hostlink_test

import (
	"bufio"
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/testrig/sshd"
)

// warm makes the host's link and puts its runner there: a first task, to
// its end.
func warm(b *testing.B, r *rig) {
	b.Helper()
	tk := r.send("true", taskrun.Options{})
	if end := r.ended(tk.ID); end.Status != task.Done {
		b.Fatalf("the first task on the host ended %s: %s", end.Status, end.Error)
	}
}

// median is the middle of ds, in milliseconds.
func median(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / 1e6
}

// BenchmarkHostSend is Send → the first byte of a command's output on this
// computer, the command running on a host whose runner is up and whose
// link is made: the record written here, the task made there, its command
// started, and its output carried back. Its limit is BenchmarkRawSSHTrue.
func BenchmarkHostSend(b *testing.B) {
	r := newRig(b, sshd.Options{}, false)
	warm(b, r)
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		tk := r.send("echo ready", taskrun.Options{})
		for n, _ := r.logs.Size(tk.ID); n == 0; n, _ = r.logs.Size(tk.ID) {
			time.Sleep(100 * time.Microsecond)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		r.ended(tk.ID)
		b.StartTimer()
	}
	b.ReportMetric(median(took), "ms")
}

// BenchmarkRawSSHTrue is `ssh host true` on the host's shared connection,
// the way Conch runs every script there: the round trip a task on a host
// cannot do without.
func BenchmarkRawSSHTrue(b *testing.B) {
	r := newRig(b, sshd.Options{}, false)
	ctx := context.Background()
	if _, err := r.hosts.Run(ctx, "box", "true"); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := r.hosts.Run(ctx, "box", "true"); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.ReportMetric(median(took), "ms")
}

// stampLines prints the time in ns 200 times, every 10 ms.
const stampLines = `for i in $(seq 200); do date +%s%N; sleep 0.01; done`

// lateness reads stamped lines as they come and returns how late each
// came, in milliseconds, sorted.
type lateness struct {
	part string
	late []float64
}

func (l *lateness) add(b []byte, now time.Time) {
	l.part += string(b)
	for {
		i := strings.IndexByte(l.part, '\n')
		if i < 0 {
			return
		}
		if ns, err := strconv.ParseInt(strings.TrimSpace(l.part[:i]), 10, 64); err == nil {
			l.late = append(l.late, float64(now.UnixNano()-ns)/1e6)
		}
		l.part = l.part[i+1:]
	}
}

func (l *lateness) p99() float64 {
	slices.Sort(l.late)
	return l.late[len(l.late)*99/100]
}

// BenchmarkHostOutput is how late a host task's output reaches what a page
// here is told and reads, p99 of every line: the runner's log there, the
// output streamed over the forwarded socket into the log here, the
// task.output announcement on the bus (which the page's event stream
// carries as it comes), and a read of the log from where the last ended,
// as the page reads it. The browser's own hop is not in it. Its limit is
// BenchmarkRawSSHOutput.
func BenchmarkHostOutput(b *testing.B) {
	r := newRig(b, sshd.Options{}, false)
	warm(b, r)
	var l lateness
	b.ResetTimer()
	for range b.N {
		sub := r.bus.Subscribe(4096)
		tk := r.send(stampLines, taskrun.Options{})
		var read int64
		for ended := false; !ended; {
			ev := <-sub.C()
			var size int64
			switch {
			case ev.Type == event.TaskOutput && ev.ID == tk.ID:
				size = ev.OutputBytes
			case ev.Type == event.TaskChanged && ev.Task.ID == tk.ID:
				// The page reads from a task's change too: its end
				// carries the last of the output.
				size, ended = ev.Task.OutputBytes, ev.Task.Status.Finished()
			}
			for read < size {
				chunk, next, err := r.logs.ReadAt(tk.ID, read, 1<<20)
				if err != nil {
					b.Fatal(err)
				}
				l.add(chunk, time.Now())
				read = next
			}
		}
		sub.Close()
		r.ended(tk.ID)
	}
	if len(l.late) < 200*b.N {
		b.Fatalf("%d stamped lines came, want %d", len(l.late), 200*b.N)
	}
	b.ReportMetric(l.p99(), "p99-ms")
}

// BenchmarkRawSSHOutput is the same lines read straight from ssh as they
// come, with nothing of Conch's between.
func BenchmarkRawSSHOutput(b *testing.B) {
	s := sshd.Start(b, sshd.Options{})
	if out, err := exec.Command("ssh-keyscan", "-p", strconv.Itoa(s.Port), "127.0.0.1").Output(); err != nil {
		b.Fatal(err)
	} else if err := appendFile(s.KnownHosts, out); err != nil {
		b.Fatal(err)
	}
	var l lateness
	b.ResetTimer()
	for range b.N {
		cmd := exec.Command("ssh", "-F", s.Config, "-T", "-o", "BatchMode=yes", s.Alias, stampLines)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		rd := bufio.NewReader(out)
		for {
			line, err := rd.ReadBytes('\n')
			l.add(line, time.Now())
			if err != nil {
				break
			}
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	if len(l.late) < 200*b.N {
		b.Fatalf("%d stamped lines came, want %d", len(l.late), 200*b.N)
	}
	b.ReportMetric(l.p99(), "p99-ms")
}
