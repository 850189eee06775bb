package output_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"conch/backend/output"
)

func ExampleLogs() {
	root, err := os.MkdirTemp("", "conch-tasks")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	logs := output.New(root)

	w, err := logs.Open("t1")
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	fmt.Fprintln(w, "building…")

	// Page through the log from the start.
	b, next, err := logs.ReadAt("t1", 0, 1024)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q next=%d\n", b, next)

	// Follow from where the page ended: later writes arrive as they happen.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := logs.Follow(ctx, "t1", next)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(w, "ok")
	fmt.Printf("%q\n", <-ch)
	fmt.Printf("summary: %q\n", w.Tail(3))
	// Output:
	// "building…\n" next=12
	// "ok\n"
	// summary: "ok\n"
}
