package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"conch/backend/task"
	"conch/backend/taskrun"
)

// taskList is GET /api/tasks's answer, as the CLI reads it.
type taskList struct {
	Tasks  []task.Task         `json:"tasks"`
	Next   string              `json:"next"`
	Counts map[task.Status]int `json:"counts"`
}

func (v *verbs) tasks() *cobra.Command {
	var status, group, search string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tasks [--status S,…] [--group G] [--search WORDS] [--json]",
		Short: "List the tasks",
		Long: `List the tasks: with no filter every task that is not finished, then the most recently
finished ones. --group (needs-you, working, waiting, finished) lists one group as the
tasks page shows it; --status narrows it to some of its statuses (queued, running,
needs-you, done, failed, stopped, interrupted).`,
		Example: `  conch tasks
  conch tasks --group needs-you
  conch tasks --status failed,interrupted --json | jq -r '.tasks[].id'`,
		GroupID: "drive", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, val := range map[string]string{"status": status, "group": group, "q": search} {
				if val != "" {
					q.Set(k, val)
				}
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			var raw json.RawMessage
			if err := c.Do(cmd.Context(), http.MethodGet, "/api/tasks?"+q.Encode(), nil, &raw); err != nil {
				return v.explain(err)
			}
			if asJSON {
				return printJSON(v.stdout, raw)
			}
			var l taskList
			if err := json.Unmarshal(raw, &l); err != nil {
				return v.explain(err)
			}
			printTasks(v.stdout, l.Tasks, time.Now())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only these statuses, split by commas")
	f.StringVar(&group, "group", "", "only one group: needs-you, working, waiting or finished")
	f.StringVarP(&search, "search", "q", "", "only tasks whose titles hold every one of these words")
	f.IntVar(&limit, "limit", 0, "at most this many (1–500; default 100)")
	f.BoolVar(&asJSON, "json", false, "print the API's answer ({tasks, next, counts, concurrent}) as JSON")
	_ = cmd.RegisterFlagCompletionFunc("group", cobra.FixedCompletions([]string{"needs-you", "working", "waiting", "finished"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("status", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var s []string
		for _, st := range task.Statuses {
			s = append(s, string(st))
		}
		return s, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// printTasks writes one line a task: its id, status, title and when it
// was made.
func printTasks(w io.Writer, tasks []task.Task, now time.Time) {
	if len(tasks) == 0 {
		fmt.Fprintln(w, "No tasks.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tAGE\tTITLE")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, t.Status, age(now.Sub(t.CreatedAt)), oneLine(t.Title, 72))
	}
	_ = tw.Flush()
}

// age says a duration the short way: 45s, 12m, 3h, 9d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// oneLine is s on one line, cut to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func (v *verbs) run() *cobra.Command {
	var cwd, mode, title, onHost string
	var wait, asJSON bool
	cmd := &cobra.Command{
		Use:   "run COMMAND [--host HOST] [--cwd DIR] [--mode MODE] [--wait] [--json]",
		Short: "Run a shell command as a background task",
		Long: `Run COMMAND (bash) as a background task in DIR (default: this folder) and print its id.
Words after COMMAND join it ("conch run -- ls -la" passes -la on).

--host runs it on another computer ('conch hosts ls' lists them): DIR is a folder
there, ~ (the default) or ~/... for the home of the user Conch signs in as.

--mode is the task's permission mode: auto (the default here: you typed the command)
runs it, ask asks first (answer with 'conch answer ID allow').

--wait follows its output to the end and exits with its outcome: 0 done, 1 failed,
stopped or interrupted, 4 when it waits for your answer (it goes on waiting in Conch).
Ctrl+C stops the waiting, not the task: 'conch stop ID' does that.`,
		Example: `  conch run "npm test"
  conch run --wait --cwd ~/proj "make build"
  conch run --mode ask "rm -rf build"
  conch run --host devbox --cwd '~/src/app' --wait "make test"`,
		GroupID: "drive",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%s needs the command to run", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return v.runTask(cmd, runFlags{cwd, mode, title, onHost, wait, asJSON}, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cwd, "cwd", "", "folder to run it in (default: this one; on a host, its home)")
	f.StringVar(&onHost, "host", "", "the host to run it on (default: this computer)")
	f.StringVar(&mode, "mode", string(task.Auto), "permission mode: auto runs it, ask asks first (plan, edits: see Conch's modes)")
	f.StringVar(&title, "title", "", "the task's title (default: the command)")
	f.BoolVar(&wait, "wait", false, "follow its output to the end; exit 0 done, 1 failed/stopped/interrupted, 4 needs you")
	f.BoolVar(&asJSON, "json", false, "print the task record as JSON (with --wait, the record it ended with)")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"auto", "ask", "edits", "plan"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagDirname("cwd")
	return cmd
}

// runFlags are run's flags.
type runFlags struct {
	cwd, mode, title, host string
	wait, asJSON           bool
}

// runTask is run: it sends the command, and with --wait follows it to its
// end.
func (v *verbs) runTask(cmd *cobra.Command, fl runFlags, args []string) error {
	dir := fl.cwd
	if fl.host == "" {
		var err error
		if dir, err = runDir(fl.cwd); err != nil {
			return err
		}
	}
	c, err := v.dial()
	if err != nil {
		return err
	}
	req := taskrun.CreateRequest{Text: strings.Join(args, " "), Title: fl.title,
		Options: taskrun.Options{Provider: "shell", Mode: fl.mode, Cwd: dir, Host: fl.host}}
	var t task.Task
	if err := c.Do(cmd.Context(), http.MethodPost, "/api/tasks", req, &t); err != nil {
		return v.explain(err)
	}
	if !fl.wait {
		if fl.asJSON {
			return printJSON(v.stdout, t)
		}
		fmt.Fprintf(v.stdout, "%s\n", t.ID)
		fmt.Fprintf(v.stderr, "Started %q (%s). Follow it with: conch logs -f %s\n", t.Title, t.Status.Words(), t.ID)
		return nil
	}
	out := v.stdout
	if fl.asJSON {
		out = io.Discard
	}
	end, err := follow(cmd.Context(), c, t.ID, out, true, nil)
	if err != nil {
		return v.explain(err)
	}
	if fl.asJSON {
		if err := printJSON(v.stdout, end); err != nil {
			return err
		}
	}
	return outcome(end)
}

// runDir is the folder a command runs in: --cwd made absolute, else this
// one.
func runDir(cwd string) (string, error) {
	if cwd == "" {
		dir, err := os.Getwd()
		if err != nil {
			return "", fail(ExitFailed, "find this folder: %v (pass --cwd)", err)
		}
		return dir, nil
	}
	dir, err := filepath.Abs(cwd)
	if err != nil {
		return "", fail(ExitUsage, "--cwd %s: %v", cwd, err)
	}
	return dir, nil
}

// outcome is how `run --wait` ends on task t.
func outcome(t task.Task) error {
	switch {
	case t.Status == task.Done:
		return nil
	case t.Status == task.NeedsYou:
		detail := ""
		if t.Ask != nil {
			detail = ": " + oneLine(t.Ask.Detail, 200)
		}
		return fail(ExitNeedsYou, "task %s needs your OK%s\nAnswer it with: conch answer %s allow (or deny)", t.ID, detail, t.ID)
	}
	why := t.Error
	if why == "" && t.ExitCode != nil {
		why = fmt.Sprintf("exit code %d", *t.ExitCode)
	}
	if why != "" {
		why = ": " + why
	}
	return fail(ExitFailed, "task %s %s%s", t.ID, t.Status.Words(), why)
}
