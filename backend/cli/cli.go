// Package cli is the conch command: its tree of verbs (cobra), their
// help and shell completion, and the exit codes a script reads. The verbs
// that drive a running Conch (tasks, run, logs, stop, retry, resume, rm,
// answer, open, hosts) talk to it through client, as `conch backup` does; the
// ones that are Conch (the window, serve, doctor) are the binary's own and
// come in through Config, with their flags parsed as they always were.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"conch/backend/backup"
	"conch/backend/client"
	"conch/backend/version"
)

// Exit codes, the same for every verb.
const (
	// ExitOK: it did what was asked (`conch run --wait`: the task is done).
	ExitOK = 0
	// ExitFailed: Conch refused or could not do it, or (`run --wait`) the
	// task failed, was stopped or interrupted.
	ExitFailed = 1
	// ExitUsage: the command line does not parse.
	ExitUsage = 2
	// ExitNotRunning: no Conch runs on the home to ask.
	ExitNotRunning = 3
	// ExitNeedsYou: `run --wait` stopped waiting because the task asks a
	// question (answer it with `conch answer`).
	ExitNeedsYou = 4
)

// Config is what the command takes from the conch binary.
type Config struct {
	// Home picks the home folder from --home (else $CONCH_HOME, else
	// ~/.conch).
	Home func(flag string) (string, error)
	// Desktop (no verb: open the window), Serve and Doctor are the
	// binary's own commands, given their arguments as typed.
	Desktop, Serve, Doctor func(args []string, stdout, stderr io.Writer) int
	// Runner is `conch runner`, the headless Conch a host runs (nil: this
	// binary has none).
	Runner func(args []string, stdout, stderr io.Writer) int
}

// exitError ends a verb with code; its message (when not empty) has been
// or is to be printed.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail ends a verb with code and says why.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// Run runs the conch command on args and returns its exit code.
func Run(args []string, stdout, stderr io.Writer, cfg Config) int {
	root := newRoot(cfg, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "conch:", ee.msg)
		}
		return ee.code
	}
	// Anything else came from parsing the command line.
	fmt.Fprintln(stderr, "conch:", err)
	fmt.Fprintln(stderr, "Run 'conch --help' for the commands, 'conch COMMAND --help' for one.")
	return ExitUsage
}

const rootLong = `Conch does work for you in the background: shell commands and chats with models and
coding agents, each a task with a card, its live output and its questions.

With no command, conch opens the window (with no display, it serves in a browser
instead, as 'conch serve'). The other commands drive the Conch running on the home
(the window or 'conch serve'), through its gateway and the sign-in token in the home.
The home folder is --home, else $CONCH_HOME, else ~/.conch.

Exit codes: 0 ok; 1 Conch refused or the task did not end done; 2 a command line that
does not parse; 3 no Conch is running on the home; 4 'conch run --wait' stopped on a
question the task asks you.`

const rootExample = `  conch                          open the window
  conch serve --addr 127.0.0.1:0 serve it in a browser on a free port
  conch run --wait "npm test"    run a command as a task, show its output, exit with its outcome
  conch tasks --group needs-you  what waits for you
  conch answer ID allow          let a task go on
  conch logs -f ID               follow a task's output to its end`

func newRoot(cfg Config, stdout, stderr io.Writer) *cobra.Command {
	var home string
	root := &cobra.Command{
		Use:     "conch",
		Short:   "Conch: a desktop assistant that does work for you in the background",
		Long:    rootLong,
		Example: rootExample,
		// The window's own flags (--home, and serve's when it falls back
		// to serving) are parsed by it, as they always were.
		DisableFlagParsing: true,
		SilenceErrors:      true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if wantsHelp(args) {
				return cmd.Help()
			}
			return code(cfg.Desktop(args, stdout, stderr))
		},
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.PersistentFlags().StringVar(&home, "home", "", "home folder (default $CONCH_HOME or ~/.conch)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	v := &verbs{cfg: cfg, home: &home, stdout: stdout, stderr: stderr}
	root.AddGroup(&cobra.Group{ID: "app", Title: "Conch itself:"}, &cobra.Group{ID: "drive", Title: "Drive a running Conch:"})
	root.AddCommand(passThrough(cfg.Serve, serveHelp, stdout, stderr), passThrough(cfg.Doctor, doctorHelp, stdout, stderr),
		passThrough(backupCommand(cfg), backupHelp, stdout, stderr), passThrough(restoreCommand(cfg), restoreHelp, stdout, stderr),
		v.version())
	if cfg.Runner != nil {
		root.AddCommand(passThrough(cfg.Runner, runnerHelp, stdout, stderr))
	}
	root.AddCommand(v.tasks(), v.run(), v.logs(), v.stop(), v.retry(), v.resume(), v.rm(), v.answer(), v.open(), v.hosts())
	root.SetHelpCommandGroupID("app")
	root.SetCompletionCommandGroupID("app")
	for _, c := range root.Commands() {
		c.DisableFlagsInUseLine = true // each Use names its flags
	}
	return root
}

// code turns a command's exit code into what RunE returns.
func code(c int) error {
	if c == ExitOK {
		return nil
	}
	return &exitError{code: c}
}

// wantsHelp reports whether args, before any "--", ask for help.
func wantsHelp(args []string) bool {
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" })
}

// help is a command the binary or backup runs with its own flags: its
// usage line, what it does, an example and the flags it takes (shown, not
// parsed here).
type help struct {
	use, short, long, example string
	flags                     func(*cobra.Command)
}

// passThrough is a command whose flags run parses itself, exactly as it
// did before conch had verbs; --help shows help's text.
func passThrough(run func(args []string, stdout, stderr io.Writer) int, h help, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use: h.use, Short: h.short, Long: h.long, Example: h.example, GroupID: "app",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if wantsHelp(args) {
				return cmd.Help()
			}
			return code(run(args, stdout, stderr))
		},
	}
	if h.flags != nil {
		h.flags(cmd)
	}
	return cmd
}

var serveHelp = help{
	use:   "serve [--addr ADDR] [--allow-remote]",
	short: "Serve Conch and its API in a browser",
	long: `Serve the app and its API on ADDR (default 127.0.0.1:7420; port 0 picks a free one) and
print the link that signs a browser tab in. An address beyond this machine is refused
unless --allow-remote is given (the link is then plain HTTP).`,
	example: "  conch serve --home /tmp/h --addr 127.0.0.1:0",
	flags: func(c *cobra.Command) {
		c.Flags().String("addr", "127.0.0.1:7420", "address to listen on (loopback only unless --allow-remote); port 0 picks a free port")
		c.Flags().Bool("allow-remote", false, "allow an --addr beyond this machine (served over plain HTTP)")
	},
}

var runnerHelp = help{
	use:   "runner [--home DIR] [--socket PATH]",
	short: "Run headless on a host: tasks and the API on a Unix socket",
	long: `Run Conch without a window for another computer to drive: its own home and store, shell
tasks, and Conch's API and event stream on a Unix socket (its folder 0700, the socket 0600),
behind the sign-in token in the home (gateway-token). It carries on when the session that
started it ends, keeps its pid in PATH.pid, and ends on SIGTERM (running tasks become
interrupted, resumable). A second runner on the same home or socket is refused. Chats and
agent CLIs are not served by a runner yet. Its --home defaults to ~/.conch-remote/home.`,
	example: "  conch runner --home ~/.conch-remote/home --socket $XDG_RUNTIME_DIR/conch/runner.sock",
	flags: func(c *cobra.Command) {
		c.Flags().String("socket", "", "the Unix socket to serve on (default $XDG_RUNTIME_DIR/conch/runner.sock, else ~/.conch-remote/run/runner.sock)")
	},
}

var doctorHelp = help{
	use:   "doctor",
	short: "Say what is wrong and where to fix it (exit 1 when something is)",
	long: `Check tasks, providers, the store, notifications, the tray and the shortcut. It asks the
Conch running on the home for its report, else checks the home directly.`,
	example: "  conch doctor --home ~/.conch",
}

var backupHelp = help{
	use:   "backup FILE [--with-output]",
	short: "Save a live backup of the store; works while Conch runs",
	long: `Save a consistent snapshot of the home's store (tasks, chats, providers, settings) to
FILE, a .db; with --with-output a .tar that holds the tasks' and chats' output logs too.
While a Conch runs on the home it is asked for the backup. FILE "-" writes to stdout.`,
	example: "  conch backup conch.db\n  conch backup conch.tar --with-output",
	flags: func(c *cobra.Command) {
		c.Flags().Bool("with-output", false, "save a tar that holds the output logs too")
	},
}

var restoreHelp = help{
	use:   "restore FILE [--replace]",
	short: "Bring a backup back into a home no Conch runs on",
	long: `Check FILE whole, then put it in place as the home's store. Tasks that were running come
back interrupted (resumable). A store the home has is replaced only with --replace, and
kept beside it.`,
	example: "  conch restore conch.tar --home ~/.conch-new",
	flags: func(c *cobra.Command) {
		c.Flags().Bool("replace", false, "replace the store the home has (it is kept beside it)")
	},
}

func backupCommand(cfg Config) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		return backup.BackupCommand(args, stdout, stderr, backup.Env{Home: cfg.Home})
	}
}

func restoreCommand(cfg Config) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		return backup.RestoreCommand(args, stdout, stderr, backup.Env{Home: cfg.Home})
	}
}

// verbs are the commands that drive a running Conch, and version.
type verbs struct {
	cfg            Config
	home           *string
	stdout, stderr io.Writer
}

// dial reaches the Conch running on the home; none is ExitNotRunning with
// how to start one.
func (v *verbs) dial() (*client.Client, error) {
	home, err := v.cfg.Home(*v.home)
	if err != nil {
		return nil, fail(ExitFailed, "%v", err)
	}
	c, err := client.Dial(home)
	if err != nil {
		return nil, v.explain(err)
	}
	return c, nil
}

// explain turns a client's error into the verb's end: no Conch is
// ExitNotRunning with how to start one, a refusal ExitFailed with
// Conch's own sentence.
func (v *verbs) explain(err error) error {
	if errors.Is(err, client.ErrNotRunning) {
		flag := ""
		if *v.home != "" {
			flag = " --home " + *v.home
		}
		return fail(ExitNotRunning, "%v. Start one with 'conch%s' (the window) or 'conch serve%s', then run this again.", err, flag, flag)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	// A value Conch refuses (an unknown status or mode) is the command
	// line's fault.
	if apiErr := (*client.Error)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest {
		return fail(ExitUsage, "%s", strings.TrimSuffix(err.Error(), "."))
	}
	return fail(ExitFailed, "%s", strings.TrimSuffix(err.Error(), "."))
}

func (v *verbs) version() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "version [--json]", Short: "Print the version, the commit and the build date", GroupID: "app",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if asJSON {
				return printJSON(v.stdout, version.Get())
			}
			fmt.Fprintln(v.stdout, version.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {version, commit, date, go, platform} as JSON")
	return cmd
}

// noArgs refuses any argument, as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments (got %q)", cmd.CommandPath(), args)
	}
	return nil
}
