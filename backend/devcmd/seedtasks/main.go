// Command seedtasks fills a Conch home's store with finished tasks and
// chats (see package seed), for the benchmarks and the UI's scale runs.
//
//	go run ./backend/devcmd/seedtasks -home DIR -n 100000
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"conch/backend/testrig/seed"
)

func main() {
	home := flag.String("home", "", "the Conch home to fill (made if missing)")
	n := flag.Int("n", 100000, "how many finished tasks to add")
	flag.Parse()
	if *home == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: seedtasks -home DIR [-n COUNT]")
		os.Exit(2)
	}
	if err := seed.Tasks(*home, *n, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "seedtasks:", err)
		os.Exit(1)
	}
}
