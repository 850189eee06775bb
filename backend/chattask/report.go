package chattask

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"conch/backend/tool"
)

// ReportTool is the tool only a task's chat has while it runs its task:
// the task says what came of its work, and its turn ends.
const ReportTool = "report_result"

// maxSummary bounds what a task reports.
const maxSummary = 64 << 10

// report holds what one turn of a task reported.
type report struct {
	summary *string
}

// made says whether the task has reported: its turn ends.
func (r *report) made() bool { return r.summary != nil }

func (r *report) tool() tool.Tool {
	return tool.Tool{
		Name: ReportTool,
		Description: "End your task by reporting what came of it: a short summary of what you did and found, " +
			"for the chat that sent you. Call it once, when the work is done; your turn ends with it.",
		Schema: tool.ObjectSchema([]string{"summary"}, `"summary":{"type":"string","description":"What you did and what came of it, in a few sentences or a short list."}`),
		Effect: tool.None,
		Title:  func(json.RawMessage) string { return "Reported the result" },
		Run: func(_ context.Context, _ tool.Env, args json.RawMessage) (string, error) {
			var a struct {
				Summary string `json:"summary"`
			}
			if err := tool.Decode(ReportTool, args, &a, "summary"); err != nil {
				return "", err
			}
			if len(a.Summary) > maxSummary {
				return "", fmt.Errorf("%s: the summary is longer than %d bytes; shorten it", ReportTool, maxSummary)
			}
			s := strings.TrimSpace(a.Summary)
			r.summary = &s
			return "Reported. Your task is done; stop here.", nil
		},
	}
}
