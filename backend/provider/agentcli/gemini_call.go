package agentcli

import (
	"fmt"
	"slices"
	"strings"

	"conch/backend/provider"
)

// geminiCall is an ACP tool call, as session/update and
// session/request_permission give it.
type geminiCall struct {
	ToolCallID string `json:"toolCallId"`
	Status     string `json:"status"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	Locations  []struct {
		Path string `json:"path"`
	} `json:"locations"`
	Content []struct {
		Type string `json:"type"`
		Path string `json:"path"`
		// OldText is the file before a diff (null: a new file), NewText
		// after it.
		OldText *string `json:"oldText"`
		NewText string  `json:"newText"`
	} `json:"content"`
}

// write is the first file change the call carries, for its question.
func (c geminiCall) write(cwd string) *provider.Write {
	for _, ct := range c.Content {
		if ct.Type != "diff" || ct.Path == "" {
			continue
		}
		if ct.OldText == nil {
			return &provider.Write{Path: relPath(cwd, ct.Path), New: ct.NewText, Whole: true}
		}
		return &provider.Write{Path: relPath(cwd, ct.Path), Old: *ct.OldText, New: ct.NewText}
	}
	return nil
}

// tool is the CLI's name of the call's tool: toolCallId is
// "<tool>__<call id>".
func (c geminiCall) tool() string {
	name, _, _ := strings.Cut(c.ToolCallID, "__")
	return name
}

// paths are the files the call names.
func (c geminiCall) paths() []string {
	var out []string
	for _, l := range c.Locations {
		out = append(out, l.Path)
	}
	for _, ct := range c.Content {
		if ct.Type == "diff" && ct.Path != "" && !slices.Contains(out, ct.Path) {
			out = append(out, ct.Path)
		}
	}
	return out
}

// action is a call for Conch's gate and guard.
func (s *geminiSession) action(c geminiCall) provider.Action {
	cwd := s.req.Cwd
	switch c.Kind {
	case "execute":
		return provider.Action{Tool: c.tool(), Detail: fmt.Sprintf("Run `%s` in %s?", c.Title, tilde(cwd)), Effect: "command", Command: c.Title}
	case "edit", "delete", "move":
		paths := c.paths()
		var shown []string
		for _, p := range paths {
			shown = append(shown, relPath(cwd, p))
		}
		what := orDefault(strings.Join(shown, ", "), c.Title)
		return provider.Action{Tool: c.tool(), Detail: "Edit " + what + "?", Effect: "edit", Paths: paths, Write: c.write(cwd)}
	case "read", "search", "think":
		return provider.Action{Tool: c.tool(), Detail: "Read " + c.Title + "?", Effect: "none", Paths: c.paths()}
	case "fetch":
		return provider.Action{Tool: c.tool(), Detail: "Fetch " + c.Title + "?", Effect: "network", URL: c.Title}
	}
	// A tool Conch does not know (another MCP server's) may do anything.
	return provider.Action{Tool: c.tool(), Detail: fmt.Sprintf("Use %s (%s)?", c.tool(), c.Title), Effect: "network"}
}

// geminiStep says what a call did, in the past tense.
func geminiStep(c geminiCall, cwd string) string {
	path := c.Title
	if ps := c.paths(); len(ps) > 0 {
		path = relPath(cwd, ps[0])
	}
	path = shorten(path)
	title := shorten(c.Title)
	switch c.tool() {
	case "read_file", "read_many_files":
		return "Read " + path
	case "run_shell_command":
		return "Ran " + title
	case "replace", "edit":
		return "Edited " + path
	case "write_file":
		return "Wrote " + path
	case "grep_search", "search_file_content", "grep":
		return "Searched for " + title
	case "glob":
		return "Listed files matching " + title
	case "list_directory":
		return "Listed " + title
	case "google_web_search":
		return "Searched the web for " + title
	case "web_fetch":
		return "Fetched " + title
	case "write_todos":
		return "Updated the to-do list"
	}
	if title != "" {
		return "Used " + c.tool() + ": " + title
	}
	return "Used " + c.tool()
}
