package chattask

import (
	"conch/backend/chat"
	"conch/backend/taskrun"
	"conch/backend/tool"
	"context"
	"fmt"
	"strings"
)

// verify runs the task's check once it has reported: a pass makes it done
// (verified); a failure gives its model the end of the check's output and
// another turn, CheckRetries times, then fails the task with that output.
// It returns the summary to keep.
func (x *Executor) verify(ctx context.Context, run *taskrun.Run, b chat.Behalf, summary string) (string, error) {
	t := run.Task
	told := "" // the end of the check's output its model was last told
	for try := 0; ; try++ {
		c, err := x.cfg.Chats.Snapshot(t.ConversationID)
		if err != nil {
			return summary, err
		}
		var askFirst bool
		switch chat.Gate(c.Mode, tool.Command, c.Tainted) {
		case chat.Refuse:
			return summary, fmt.Errorf("The check %q was not run: %s mode runs no commands", t.Check, c.Mode)
		case chat.AskFirst:
			askFirst = true
		}
		res, err := taskrun.RunCheck(ctx, run, c.Cwd, t.Check, askFirst)
		if err != nil {
			return summary, err
		}
		if res.Passed {
			return summary, nil
		}
		tail := strings.TrimSpace(res.Tail)
		said := checkSaid(t.Check, res.Words(), tail, told, try > 0)
		told = tail
		if try >= t.CheckRetries {
			// Its model reads the last failure in the transcript, so a
			// resumed task's notice need not say it again.
			if err := x.cfg.Chats.Tell(t.ConversationID, said); err != nil {
				run.Progress("", "Could not tell its chat how the check ended: "+err.Error())
			}
			if tail == "" {
				return summary, fmt.Errorf("The check `%s` %s, with no output.", t.Check, res.Words())
			}
			return summary, fmt.Errorf("The check `%s` %s. Its output ends:\n\n%s", t.Check, res.Words(), tail)
		}
		tell := said + "\n\n[Fix what it reports, then report again. The check runs again after you report.]"
		out, err := x.turn(ctx, run, b, chat.Turn{Tell: tell})
		if err != nil {
			return out.summary, err
		}
		summary = orNothing(out.summary)
	}
}

// checkSaid is how a failed check is told to the task's model: with the
// end of its output, once; a check that failed again with the same output
// as it was last told says so instead of repeating it.
func checkSaid(check, words, tail, told string, again bool) string {
	switch {
	case again && tail == told:
		return fmt.Sprintf("[The check `%s` %s again, with the same output.]", check, words)
	case tail == "":
		return fmt.Sprintf("[The check `%s` %s, with no output.]", check, words)
	}
	return fmt.Sprintf("[The check `%s` %s. Its output ends:]\n\n```\n%s\n```", check, words, tail)
}

// checkFailure reports whether reason is the error verify failed a task
// with, after telling its model the check's output.
func checkFailure(reason, check string) bool {
	return check != "" && strings.HasPrefix(reason, "The check `"+check+"` ")
}

// orNothing is s, or a sentence saying there was nothing.
func orNothing(s string) string {
	if strings.TrimSpace(s) == "" {
		return "It finished without saying anything."
	}
	return s
}
