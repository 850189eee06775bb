package agentcli

import (
	"encoding/json"
	"fmt"
	"strings"

	"conch/backend/provider"
)

// claudeStep says what a tool_use did, in the past tense.
func claudeStep(name string, raw json.RawMessage, cwd string) string {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	path := func() string {
		p := str(in, "file_path")
		if p == "" {
			p = str(in, "notebook_path")
		}
		if p == "" {
			p = str(in, "path")
		}
		return shorten(relPath(cwd, p))
	}
	switch name {
	case "Read":
		return "Read " + path()
	case "Bash":
		return "Ran " + shorten(str(in, "command"))
	case "Edit", "MultiEdit", "NotebookEdit":
		return "Edited " + path()
	case "Write":
		return "Wrote " + path()
	case "Grep":
		return "Searched for " + shorten(str(in, "pattern"))
	case "Glob":
		return "Listed files matching " + shorten(str(in, "pattern"))
	case "LS":
		return "Listed " + path()
	case "WebFetch":
		return "Fetched " + shorten(str(in, "url"))
	case "WebSearch":
		return "Searched the web for " + shorten(str(in, "query"))
	case "Task", "Agent":
		return "Delegated " + shorten(orDefault(str(in, "description"), "a task"))
	case "TodoWrite":
		return "Updated the to-do list"
	}
	return "Used " + name
}

// claudeAction is a step of Claude Code's, for Conch's gate and guard:
// what it does in the person's words, what it may change, and the files
// it touches (none may lie outside the chat's folder).
func claudeAction(name string, raw json.RawMessage, cwd string) provider.Action {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	file := orDefault(str(in, "file_path"), str(in, "notebook_path"))
	path := relPath(cwd, file)
	var paths []string
	if file != "" {
		paths = []string{file}
	}
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		cmd := str(in, "command")
		if cwd == "" {
			return provider.Action{Tool: name, Detail: fmt.Sprintf("Run `%s`?", cmd), Effect: "command", Command: cmd}
		}
		return provider.Action{Tool: name, Detail: fmt.Sprintf("Run `%s` in %s?", cmd, tilde(cwd)), Effect: "command", Command: cmd}
	case "Edit", "MultiEdit", "NotebookEdit":
		return provider.Action{Tool: name, Detail: "Edit " + path + "?", Effect: "edit", Paths: paths, Write: claudeEdit(name, raw, path)}
	case "Write":
		var w *provider.Write
		if content, ok := in["content"].(string); ok && path != "" {
			w = &provider.Write{Path: path, New: content, Whole: true}
		}
		return provider.Action{Tool: name, Detail: "Write " + path + "?", Effect: "edit", Paths: paths, Write: w}
	case "ExitPlanMode":
		// Leaving plan mode would widen the chat's mode: plan refuses it.
		return provider.Action{Tool: name, Detail: "Leave plan mode and start making changes?", Effect: "edit"}
	case "Read", "Glob", "Grep", "LS":
		if dir := str(in, "path"); dir != "" {
			paths = append(paths, dir)
		}
		detail := "Use " + name + "?"
		if path != "" {
			detail = "Read " + path + "?"
		}
		return provider.Action{Tool: name, Detail: detail, Effect: "none", Paths: paths}
	case "TodoWrite", "Task", "Agent", "ToolSearch", "AskUserQuestion", "EnterPlanMode":
		return provider.Action{Tool: name, Detail: "Use " + name + "?", Effect: "none"}
	case "WebFetch":
		return provider.Action{Tool: name, Detail: "Fetch " + str(in, "url") + "?", Effect: "network", URL: str(in, "url")}
	case "WebSearch":
		return provider.Action{Tool: name, Detail: "Search the web for " + str(in, "query") + "?", Effect: "network"}
	}
	args := string(raw)
	if r := []rune(args); len(r) > 200 {
		args = string(r[:199]) + "…"
	}
	// A tool Conch does not know may do anything: it asks.
	return provider.Action{Tool: name, Detail: fmt.Sprintf("Use %s with %s?", name, args), Effect: "network"}
}

// claudeEdit is the piece an Edit or MultiEdit replaces, and what
// replaces it (MultiEdit's pieces one after the other); nil for a notebook.
func claudeEdit(name string, raw json.RawMessage, path string) *provider.Write {
	var in struct {
		Old   string `json:"old_string"`
		New   string `json:"new_string"`
		Edits []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
		} `json:"edits"`
	}
	if path == "" || json.Unmarshal(raw, &in) != nil {
		return nil
	}
	switch name {
	case "Edit":
		return &provider.Write{Path: path, Old: in.Old, New: in.New}
	case "MultiEdit":
		if len(in.Edits) == 0 {
			return nil
		}
		var old, next []string
		for _, e := range in.Edits {
			old, next = append(old, e.Old), append(next, e.New)
		}
		return &provider.Write{Path: path, Old: strings.Join(old, "\n…\n"), New: strings.Join(next, "\n…\n")}
	}
	return nil
}
