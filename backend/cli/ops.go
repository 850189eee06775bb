package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"conch/backend/client"
	"conch/backend/task"
)

// taskPath is the API path of task id, and of its action when given.
func taskPath(id string, action ...string) string {
	p := "/api/tasks/" + url.PathEscape(id)
	for _, a := range action {
		p += "/" + a
	}
	return p
}

// oneID takes exactly one task id, as a usage error otherwise.
func oneID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s takes one task id (got %d arguments); 'conch tasks' lists them", cmd.CommandPath(), len(args))
	}
	return nil
}

// taskIDs completes a task id from the running Conch's list (of group,
// or the overview when ""), each with its title.
func (v *verbs) taskIDs(group string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := v.dial()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		path := "/api/tasks"
		if group != "" {
			path += "?group=" + group
		}
		var l taskList
		if c.Do(ctx, http.MethodGet, path, nil, &l) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, t := range l.Tasks {
			ids = append(ids, t.ID+"\t"+oneLine(string(t.Status)+": "+t.Title, 60))
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// change is a verb that POSTs an action to one task and shows the task it
// answers with.
func (v *verbs) change(use, action, short, long, done string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: use + " ID [--json]", Short: short, Long: long, GroupID: "drive",
		Example: "  conch " + use + " 0199c1d2-…", Args: oneID, ValidArgsFunction: v.taskIDs(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			var t task.Task
			if err := c.Do(cmd.Context(), http.MethodPost, taskPath(args[0], action), nil, &t); err != nil {
				return v.explain(fmt.Errorf("%s %s: %w", use, args[0], err))
			}
			if asJSON {
				return printJSON(v.stdout, t)
			}
			fmt.Fprintf(v.stdout, "%s %q: %s.\n", done, t.Title, t.Status.Words())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the task record as JSON")
	return cmd
}

func (v *verbs) stop() *cobra.Command {
	return v.change("stop", "stop", "Stop a task that is waiting or working",
		"Stop the task: its process tree ends at once; its output so far stays.", "Stopped")
}

func (v *verbs) retry() *cobra.Command {
	return v.change("retry", "retry", "Run a finished task again from the start",
		"Queue a finished task (done, failed, stopped, interrupted) to run again from the start.", "Queued again")
}

func (v *verbs) resume() *cobra.Command {
	return v.change("resume", "resume", "Carry a chat task on from where it stopped",
		`Carry an interrupted, failed or stopped chat task on with its whole transcript; its model
is told what happened. A shell command cannot be resumed: retry it.`, "Resumed")
}

func (v *verbs) rm() *cobra.Command {
	return &cobra.Command{
		Use: "rm ID", Short: "Delete a task that is not working, with its output", GroupID: "drive",
		Example: "  conch rm 0199c1d2-…", Args: oneID, ValidArgsFunction: v.taskIDs(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			if err := c.Do(cmd.Context(), http.MethodDelete, taskPath(args[0]), nil, nil); err != nil {
				return v.explain(fmt.Errorf("rm %s: %w", args[0], err))
			}
			fmt.Fprintf(v.stdout, "Deleted %s.\n", args[0])
			return nil
		},
	}
}

func (v *verbs) answer() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "answer ID allow|deny [--json]", Short: "Answer the question a task waits on", GroupID: "drive",
		Long:    "Answer the task's pending question (see 'conch tasks --group needs-you'): allow lets it go on, deny refuses that step.",
		Example: "  conch answer 0199c1d2-… allow\n  conch answer 0199c1d2-… deny",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || (args[1] != "allow" && args[1] != "deny") {
				return fmt.Errorf("%s takes a task id and allow or deny", cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return []string{"allow\tlet it go on", "deny\trefuse that step"}, cobra.ShellCompDirectiveNoFileComp
			}
			return v.taskIDs("needs-you")(cmd, args, s)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			var t task.Task
			if err := c.Do(cmd.Context(), http.MethodGet, taskPath(args[0]), nil, &t); err != nil {
				return v.explain(fmt.Errorf("answer %s: %w", args[0], err))
			}
			if t.Ask == nil {
				return fail(ExitFailed, "answer %s: it asks nothing (it is %s)", args[0], t.Status.Words())
			}
			allow := args[1] == "allow"
			body := map[string]any{"askId": t.Ask.ID, "allow": allow}
			if err := c.Do(cmd.Context(), http.MethodPost, taskPath(args[0], "answer"), body, &t); err != nil {
				return v.explain(fmt.Errorf("answer %s: %w", args[0], err))
			}
			if asJSON {
				return printJSON(v.stdout, t)
			}
			word := map[bool]string{true: "Allowed", false: "Denied"}[allow]
			fmt.Fprintf(v.stdout, "%s %q: %s.\n", word, t.Title, t.Status.Words())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the task record as JSON")
	return cmd
}

func (v *verbs) open() *cobra.Command {
	return &cobra.Command{
		Use: "open ID", Short: "Bring the window forward on a task", GroupID: "drive",
		Long:    "Show the task in Conch as a click on its notification does: the window comes forward on the chat it came from, and every page open on Conch follows.",
		Example: "  conch open 0199c1d2-…", Args: oneID, ValidArgsFunction: v.taskIDs(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			if err := c.Do(cmd.Context(), http.MethodPost, taskPath(args[0], "open"), nil, nil); err != nil {
				return v.explain(fmt.Errorf("open %s: %w", args[0], err))
			}
			return nil
		},
	}
}

func (v *verbs) logs() *cobra.Command {
	var keepOn bool
	cmd := &cobra.Command{
		Use: "logs [-f] ID", Short: "Print a task's output; -f follows it to the task's end", GroupID: "drive",
		Long: `Print what the task has written so far. With -f, go on printing what it writes until it
ends (a question it asks meanwhile is said on stderr; answer it with 'conch answer').`,
		Example: "  conch logs 0199c1d2-…\n  conch logs -f 0199c1d2-…",
		Args:    oneID, ValidArgsFunction: v.taskIDs(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			id := args[0]
			if keepOn {
				_, err = followAll(cmd.Context(), c, id, v.stdout, v.stderr)
			} else {
				_, err = drain(cmd.Context(), c, id, 0, v.stdout)
			}
			if err != nil {
				return v.explain(fmt.Errorf("logs %s: %w", id, err))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&keepOn, "follow", "f", false, "go on until the task ends")
	return cmd
}

// pollEvery is how often a follow asks how the task stands.
const pollEvery = 150 * time.Millisecond

// drain writes task id's output from offset to its end now, and returns
// where it ended.
func drain(ctx context.Context, c *client.Client, id string, offset int64, w io.Writer) (int64, error) {
	for {
		b, next, err := c.Output(ctx, id, offset)
		if err != nil {
			return offset, err
		}
		if len(b) == 0 {
			return next, nil
		}
		if _, err := w.Write(b); err != nil {
			return offset, err
		}
		offset = next
	}
}

// follow writes task id's output to w as it comes until the task ends,
// or (stopOnAsk) asks a question, and returns the task as it then stood.
// Each round reads the task before its output, so the output of a task
// seen finished is whole once drained: all of it is written, once, in
// order.
func follow(ctx context.Context, c *client.Client, id string, w io.Writer, stopOnAsk bool, asked func(task.Task)) (task.Task, error) {
	var offset int64
	seen := ""
	for {
		var t task.Task
		if err := c.Do(ctx, http.MethodGet, taskPath(id), nil, &t); err != nil {
			return t, err
		}
		next, err := drain(ctx, c, id, offset, w)
		if err != nil {
			return t, err
		}
		offset = next
		switch {
		case t.Status.Finished():
			return t, nil
		case t.Status == task.NeedsYou && stopOnAsk:
			return t, nil
		case t.Status == task.NeedsYou && t.Ask != nil && t.Ask.ID != seen && asked != nil:
			seen = t.Ask.ID
			asked(t)
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// followAll is `logs -f`: it follows through questions, saying each on
// stderr.
func followAll(ctx context.Context, c *client.Client, id string, stdout, stderr io.Writer) (task.Task, error) {
	return follow(ctx, c, id, stdout, false, func(t task.Task) {
		fmt.Fprintf(stderr, "conch: task %s waits for your OK: %s\nconch: answer it with: conch answer %s allow (or deny)\n", t.ID, oneLine(t.Ask.Detail, 200), t.ID)
	})
}
