package backup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"conch/backend/client"
	"conch/backend/internal/quantity"
	"conch/backend/store"
)

// Env is what the commands take from the conch binary: how it picks the
// home. A running Conch on it is reached through client.
type Env struct {
	// Home picks the home folder from --home (else $CONCH_HOME, else
	// ~/.conch).
	Home func(flag string) (string, error)
}

// BackupUsage and RestoreUsage are the commands' lines in conch's usage.
const (
	BackupUsage = `  conch backup FILE [--with-output] [--home DIR]
                                           save a live backup of the store (a .db), with --with-output a .tar that
                                           holds the tasks' and chats' output logs too; works while Conch runs`
	RestoreUsage = `  conch restore FILE [--home DIR] [--replace]
                                           bring a backup back into a home no Conch runs on; running tasks come back
                                           interrupted (resumable); --replace replaces a store the home has, kept beside it`
)

// BackupCommand is `conch backup FILE [--with-output] [--home DIR]`.
//
// bbolt's lock is all or nothing across processes: a running Conch holds
// the store exclusively, and even a read-only open needs a shared lock it
// cannot get. So when no Conch runs the command reads the store itself
// (read-only: the file is not changed, and a Conch starting meanwhile
// waits); when one does, it asks that Conch for the snapshot over its
// gateway (GET /api/backup with the home's sign-in token), the way `conch
// doctor` asks it for its report. Either way the file is checked before it
// is put in place, atomically (a temporary file renamed), readable only by
// the person (it holds their chats, and provider keys when the OS has no
// keyring). FILE "-" writes to stdout.
func BackupCommand(args []string, stdout, stderr io.Writer, env Env) int {
	a, ok := parseArgs("backup", BackupUsage, "with-output", "save a tar that holds the output logs too", args, stderr)
	if !ok {
		return 2
	}
	file, withOutput := a.file, a.on
	fail := func(err error) int { fmt.Fprintln(stderr, "conch: backup:", err); return 1 }
	if ext := strings.ToLower(filepath.Ext(file)); ext == ".tar" && !withOutput {
		return fail(fmt.Errorf("%s ends in .tar: add --with-output for a tar with the logs, or name it .db", file))
	} else if ext == ".db" && withOutput {
		return fail(fmt.Errorf("%s ends in .db, but --with-output saves a tar: name it .tar", file))
	}
	home, err := env.Home(a.home)
	if err != nil {
		return fail(err)
	}
	dbPath := filepath.Join(home, DBName)
	if _, err := os.Stat(dbPath); err != nil {
		return fail(fmt.Errorf("there is no Conch home at %s (no %s): %w", home, DBName, err))
	}

	var from string // the running Conch asked, if one was
	take := func(w io.Writer) error {
		st, err := store.OpenReadOnly(dbPath)
		if err == nil {
			defer st.Close()
			_, err = Source{Store: st, Home: home}.Write(w, withOutput, nil)
			return err
		}
		if !errors.Is(err, store.ErrInUse) {
			return err
		}
		from, err = askRunning(home, withOutput, w)
		if err != nil {
			return fmt.Errorf("%v, and it did not hand over a backup (%w); take one in its Settings → Backup, or stop it and run this again", inUseText(dbPath), err)
		}
		return nil
	}
	var contents Contents
	if file == "-" {
		if err := take(stdout); err != nil {
			return fail(err)
		}
	} else {
		if err := writeAtomic(file, take, func(tmp string) (err error) {
			contents, err = Check(tmp)
			return err
		}); err != nil {
			return fail(err)
		}
	}
	if file == "-" {
		return 0
	}
	fi, _ := os.Stat(file)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	if from != "" {
		fmt.Fprintf(stdout, "Asked the running Conch at %s.\n", from)
	}
	what := fmt.Sprintf("%s, %s", quantity.Plural(contents.Tasks, "task", "tasks"), quantity.Plural(contents.Conversations, "chat", "chats"))
	if withOutput {
		what += ", " + quantity.Plural(contents.Logs, "output log", "output logs")
	}
	fmt.Fprintf(stdout, "Backed up %s to %s: %s (%s).\nRestore it with: conch restore %s --home DIR\n", home, file, what, quantity.Bytes(size), file)
	return 0
}

// inUseText says which process holds the store at dbPath.
func inUseText(dbPath string) string {
	if pid, ok := store.Holder(dbPath); ok {
		return fmt.Sprintf("%s is in use by a running Conch (process %d)", filepath.Dir(dbPath), pid)
	}
	return filepath.Dir(dbPath) + " is in use by a running Conch"
}

// askRunning streams a backup from the Conch serving from home into w and
// returns the address it answered at.
func askRunning(home string, withOutput bool, w io.Writer) (string, error) {
	c, err := client.Dial(home)
	if errors.Is(err, client.ErrNotRunning) {
		return "", errors.New("it says nowhere where it serves")
	} else if err != nil {
		return "", err
	}
	path := "/api/backup"
	if withOutput {
		path += "?output=1"
	}
	resp, err := c.Send(context.Background(), http.MethodGet, path, nil)
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		if apiErr.Message != "" {
			return "", fmt.Errorf("it answered %d: %s", apiErr.Status, apiErr.Message)
		}
		return "", fmt.Errorf("it answered %d %s", apiErr.Status, http.StatusText(apiErr.Status))
	}
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return "", fmt.Errorf("the backup broke off: %w", err)
	}
	return c.Base, nil
}

// writeAtomic fills a temporary file beside file, checks it, and renames it
// into place; on any failure file is as it was and no temporary is left.
func writeAtomic(file string, fill func(io.Writer) error, check func(tmp string) error) error {
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder; name the file to write", file)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".conch-backup-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := check(tmp.Name()); err != nil {
		return fmt.Errorf("the backup does not read back: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	done = true
	syncDir(filepath.Dir(file))
	return nil
}

// RestoreCommand is `conch restore FILE [--home DIR] [--replace]`.
func RestoreCommand(args []string, stdout, stderr io.Writer, env Env) int {
	a, ok := parseArgs("restore", RestoreUsage, "replace", "replace the store the home has (it is kept beside it)", args, stderr)
	if !ok {
		return 2
	}
	file := a.file
	home, err := env.Home(a.home)
	if err != nil {
		fmt.Fprintln(stderr, "conch: restore:", err)
		return 1
	}
	res, err := Restore(file, home, RestoreOptions{Replace: a.on})
	if err != nil {
		fmt.Fprintln(stderr, "conch:", err)
		if errors.Is(err, store.ErrInUse) {
			fmt.Fprintln(stderr, "conch: a restore needs the home to itself: quit that Conch, then run this again.")
		}
		return 1
	}
	what := fmt.Sprintf("%s, %s", quantity.Plural(res.Tasks, "task", "tasks"), quantity.Plural(res.Conversations, "chat", "chats"))
	if res.Logs > 0 {
		what += ", " + quantity.Plural(res.Logs, "output log", "output logs")
	}
	fmt.Fprintf(stdout, "Restored %s into %s: %s.\n", file, home, what)
	switch res.Interrupted {
	case 0:
	case 1:
		fmt.Fprintln(stdout, "1 task was running when the backup was taken; it is interrupted now: carry it on from the tasks page (Resume, or Try again).")
	default:
		fmt.Fprintf(stdout, "%d tasks were running when the backup was taken; they are interrupted now: carry them on from the tasks page (Resume, or Try again).\n", res.Interrupted)
	}
	switch res.Queued {
	case 0:
	case 1:
		fmt.Fprintln(stdout, "1 task is waiting in line; it starts when Conch does.")
	default:
		fmt.Fprintf(stdout, "%d tasks are waiting in line; they start when Conch does.\n", res.Queued)
	}
	if res.Kept != "" {
		fmt.Fprintf(stdout, "The store it replaced is kept as %s.\n", res.Kept)
	}
	return 0
}

// fileArgs are what backup and restore are given: the one FILE, --home
// DIR, and whether the command's own switch (--with-output, --replace) is
// on.
type fileArgs struct {
	file, home string
	on         bool
}

// parseArgs reads a command's arguments: one FILE, --home DIR and the
// switch named on. It is false, the usage shown, when they do not parse or
// there is not exactly one FILE; the command then exits with 2.
func parseArgs(cmd, usage, on, onUsage string, args []string, stderr io.Writer) (fileArgs, bool) {
	var a fileArgs
	fl := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&a.home, "home", "", "home folder (default $CONCH_HOME or ~/.conch)")
	fl.BoolVar(&a.on, on, false, onUsage)
	fl.Usage = func() { fmt.Fprintln(stderr, "Usage:\n"+usage); fl.PrintDefaults() }
	pos, err := parseFlags(fl, args)
	if err != nil {
		return a, false
	}
	if len(pos) != 1 {
		fl.Usage()
		return a, false
	}
	a.file = pos[0]
	return a, true
}

// parseFlags parses flags wherever they are among the arguments (`conch
// backup FILE --with-output` as well as `--with-output FILE`) and returns
// the others; everything after "--" is an argument.
func parseFlags(fl *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for i, a := range args {
		if a == "--" {
			rest = append([]string(nil), args[i+1:]...)
			args = args[:i]
			break
		}
	}
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		args = fl.Args()
		if len(args) == 0 {
			return append(pos, rest...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
