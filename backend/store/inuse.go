package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// InUseError says which process holds a home's database. It matches
// ErrInUse.
type InUseError struct {
	Home    string
	PID     int    // 0 when the OS does not say
	Command string // the holder's command line, when readable
}

func (e *InUseError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s is in use by another process (is another Conch running?); stop it, or use another --home", e.Home)
	}
	who := fmt.Sprintf("process %d", e.PID)
	if e.Command != "" {
		who += " (" + e.Command + ")"
	}
	return fmt.Sprintf("%s is in use by another Conch, %s; stop it, or use another --home", e.Home, who)
}

// Unwrap makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Unwrap() error { return ErrInUse }

// inUse names the process that holds the database at path.
func inUse(path string) error {
	e := &InUseError{Home: filepath.Dir(path)}
	if pid, ok := Holder(path); ok {
		e.PID = pid
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			e.Command = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return e
}
