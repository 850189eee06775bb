package store_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"conch/backend/store"
	"conch/backend/task"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "conch-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(filepath.Join(dir, "conch.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// PutTask returns once the task is on disk.
	if err := s.PutTask(task.Task{ID: "t1", Title: "Run the tests"}); err != nil {
		log.Fatal(err)
	}
	t, err := s.Task("t1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Title)

	_, err = s.Task("t2")
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// Run the tests
	// true
}
