package shell_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"conch/backend/event"
	"conch/backend/output"
	"conch/backend/pref"
	"conch/backend/provider/shell"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
)

// benchParallel is how many tasks run at once in the shell benchmarks:
// the default limit of background tasks.
var benchParallel = pref.Defaults().Limits.Background

// senders is how many clients send the tasks of the shell benchmarks at
// once (each waits for its task to be stored before sending the next), so
// their writes share commits as those of a busy Conch do.
var senders = benchParallel

// BenchmarkRawSpawn is the physical limit of BenchmarkShellTasks: `bash -c
// true` started and waited for, benchParallel at a time.
func BenchmarkRawSpawn(b *testing.B) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("no bash")
	}
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range benchParallel {
		wg.Go(func() {
			for range jobs {
				if err := exec.Command(bash, "-c", "true").Run(); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for b.Loop() {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
}

// benchRunner starts a runner over a real store with the shell provider,
// and counts the tasks that finished.
func benchRunner(b *testing.B) (*taskrun.Runner, *event.Bus, string) {
	b.Helper()
	home, dir := b.TempDir(), b.TempDir()
	st, err := store.Open(filepath.Join(home, "conch.db"))
	if err != nil {
		b.Fatal(err)
	}
	bus := event.NewBus()
	r := taskrun.New(taskrun.Config{
		Store: st, Bus: bus, Logs: output.New(filepath.Join(home, "tasks")), Home: dir,
		Executors: map[string]taskrun.Executor{"shell": &shell.Shell{Home: dir, Grace: time.Second}},
	})
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		r.Stop()
		bus.Close()
		_ = st.Close()
	})
	return r, bus, dir
}

// runTasks sends n tasks of command from senders clients and waits until
// every one has ended done, failing on any other end; it returns their ids.
func runTasks(b *testing.B, r *taskrun.Runner, bus *event.Bus, dir, command string, n int) []string {
	b.Helper()
	sub := bus.Subscribe(4 * n)
	defer sub.Close()
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	send := make(chan struct{})
	for range senders {
		wg.Go(func() {
			for range send {
				tk, err := r.Create(taskrun.CreateRequest{Text: command, Options: taskrun.Options{Mode: string(task.Auto), Cwd: dir}})
				if err != nil {
					b.Error(err)
					continue
				}
				mu.Lock()
				ids[tk.ID] = true
				mu.Unlock()
			}
		})
	}
	for range n {
		send <- struct{}{}
	}
	close(send)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	done := make([]string, 0, n)
	for left := n; left > 0; {
		select {
		case ev := <-sub.C():
			if ev.Type != event.TaskChanged || !ids[ev.Task.ID] || !ev.Task.Status.Finished() {
				continue
			}
			if ev.Task.Status != task.Done {
				b.Fatalf("%q ended %s: %s", command, ev.Task.Status, ev.Task.Error)
			}
			delete(ids, ev.Task.ID)
			done = append(done, ev.Task.ID)
			left--
		case <-sub.Done():
			b.Fatal("the benchmark fell behind the events")
		case <-time.After(time.Minute):
			b.Fatalf("%d tasks never finished", left)
		}
	}
	return done
}

// BenchmarkShellTasks is shell tasks (`true`, auto) carried from sent to
// done through the runner: every state change stored, the output logged,
// the events published; sent by benchParallel clients and run
// benchParallel at once.
func BenchmarkShellTasks(b *testing.B) {
	r, bus, dir := benchRunner(b)
	batch := 50
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		runTasks(b, r, bus, dir, "true", min(batch, b.N-done))
	}
}

// outputBytes is what one run of the output benchmarks prints.
const outputBytes = 200 << 20

// BenchmarkRawCommandToFile is the limit of BenchmarkShellTaskOutput: the
// same command writing the same bytes to a file of its own. Each run writes
// a new file and first deletes the last run's, as BenchmarkShellTaskOutput
// deletes each task (and its log) before the next, so neither waits on the
// disk writing back the runs before it: both measure getting the bytes
// into a file. (Truncating one file again instead has ext4 start writing
// it back at each close, and the next truncate wait for that.)
func BenchmarkRawCommandToFile(b *testing.B) {
	dir := b.TempDir()
	b.SetBytes(outputBytes)
	last := ""
	for i := 0; b.Loop(); i++ {
		if last != "" {
			if err := os.Remove(last); err != nil {
				b.Fatal(err)
			}
		}
		last = filepath.Join(dir, fmt.Sprintf("out-%d", i))
		cmd := exec.Command("bash", "-c", fmt.Sprintf("head -c %d /dev/zero > %s", outputBytes, last))
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShellTaskOutput is one shell task printing 200 MB, ingested
// into its log while it runs; the next run deletes it first, as the raw
// command's next run deletes its last file.
func BenchmarkShellTaskOutput(b *testing.B) {
	r, bus, dir := benchRunner(b)
	b.SetBytes(outputBytes)
	var last []string
	for b.Loop() {
		for _, id := range last {
			if err := r.Delete(id); err != nil {
				b.Fatal(err)
			}
		}
		last = runTasks(b, r, bus, dir, fmt.Sprintf("head -c %d /dev/zero", outputBytes), 1)
	}
}
