package ask

import (
	"regexp"
	"strings"
)

// The destructive-command check: the Go side of
// frontend/src/lib/approvals/danger.ts, so the tray marks the same
// questions the page warns about. Conservative, like the page's: it reads
// the command a question shows word by word, and only a known shape
// (rm -r, --delete, force pushes, reset --hard, …) warns. Keep the two in
// step; danger_test.go holds the page's cases.

// commandTools are the tools whose question is a command.
var commandTools = map[string]bool{
	"run_command": true, "bash": true, "Bash": true, "exec_command": true, "shell": true, "run_shell_command": true,
}

var backticked = regexp.MustCompile("`([^`]+)`")

// commandOf is the command a question is about: the text between its first
// backticks, else a command tool's whole detail, else "".
func commandOf(tool, detail string) string {
	if m := backticked.FindStringSubmatch(detail); m != nil {
		return m[1]
	}
	if commandTools[tool] {
		return detail
	}
	return ""
}

// simpleCommands splits a command line into simple commands (at ;, &&,
// ||, |, &, parentheses and new lines), each as its words, quotes removed.
func simpleCommands(cmd string) [][]string {
	var out [][]string
	var words []string
	var word strings.Builder
	var quote rune
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			out = append(out, words)
		}
		words = nil
	}
	rs := []rune(cmd)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if quote != 0 {
			if c == quote {
				quote = 0
			} else {
				word.WriteRune(c)
			}
			continue
		}
		switch {
		case c == '\'' || c == '"':
			quote = c
			inWord = true
		case c == '\\' && i+1 < len(rs):
			i++
			word.WriteRune(rs[i])
			inWord = true
		case strings.ContainsRune(";|&\n()", c):
			endCommand()
		case c == ' ' || c == '\t':
			endWord()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	endCommand()
	return out
}

// wrappers run the command after them.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "command": true, "exec": true, "nohup": true, "time": true, "nice": true, "xargs": true, "builtin": true,
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// programOf is the program a simple command runs (its base name) and its
// arguments, past wrappers (sudo, env, xargs), their options and
// VAR=value prefixes; ok is false when there is none.
func programOf(words []string) (name string, args []string, ok bool) {
	i := 0
	for i < len(words) && (assignment.MatchString(words[i]) || wrappers[words[i]]) {
		i++
		// A wrapper's own options (sudo -u root, xargs -0) come before the program.
		for i < len(words) && strings.HasPrefix(words[i], "-") {
			i++
		}
	}
	if i >= len(words) {
		return "", nil, false
	}
	name = words[i]
	if j := strings.LastIndexByte(name, '/'); j >= 0 {
		name = name[j+1:]
	}
	return name, words[i+1:], true
}

var shortFlags = regexp.MustCompile(`^-[A-Za-z]+$`)

// hasFlag reports whether args hold a short flag letter (in -rf, or -r -f)
// or one of the long forms.
func hasFlag(args []string, letter string, long ...string) bool {
	for _, a := range args {
		for _, l := range long {
			if a == l {
				return true
			}
		}
		if shortFlags.MatchString(a) && strings.Contains(a, letter) {
			return true
		}
	}
	return false
}

func has(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}

func anyPrefix(args []string, prefixes ...string) bool {
	for _, a := range args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				return true
			}
		}
	}
	return false
}

// dangerOfCommand says why one simple command is destructive, or "".
func dangerOfCommand(words []string) string {
	name, args, ok := programOf(words)
	if !ok {
		return ""
	}
	if has(args, "--delete") || (name == "find" && has(args, "-delete")) {
		return "It deletes files (--delete), and they cannot be brought back."
	}
	switch name {
	case "rm":
		if hasFlag(args, "r", "--recursive") || hasFlag(args, "R") {
			return "It deletes files and folders for good (rm -r), without asking again."
		}
	case "git":
		var sub string
		var rest []string
		for i, a := range args {
			if !strings.HasPrefix(a, "-") {
				sub, rest = a, args[i+1:]
				break
			}
		}
		switch {
		case sub == "push" && (hasFlag(rest, "f", "--force", "--force-with-lease", "--mirror") || anyPrefix(rest, "--force", "+")):
			return "It force-pushes: the remote's history is rewritten and others' commits there can be lost."
		case sub == "push" && (has(rest, "-d") || anyPrefix(rest, ":")):
			return "It deletes a branch or tag on the remote."
		case sub == "reset" && has(rest, "--hard"):
			return "It throws away uncommitted changes (git reset --hard)."
		case sub == "clean" && hasFlag(rest, "f", "--force"):
			return "It deletes untracked files for good (git clean)."
		case sub == "branch" && has(rest, "-D"):
			return "It deletes a branch even if its work is not merged."
		}
	case "mkfs", "wipefs", "shred":
		return "It wipes data for good (" + name + ")."
	case "dd":
		if anyPrefix(args, "of=") {
			return "It writes raw bytes over a file or disk (dd of=…)."
		}
	default:
		if strings.HasPrefix(name, "mkfs.") {
			return "It wipes data for good (" + name + ")."
		}
	}
	return ""
}

// Danger says why the command a question is about (tool and detail as the
// question carries them) is destructive, in one sentence for its warning,
// or "" when nothing in it is. A command line warns when any of its simple
// commands does. The page's check (danger.ts) gives the same answers.
func Danger(tool, detail string) string {
	cmd := commandOf(tool, detail)
	if cmd == "" {
		return ""
	}
	for _, words := range simpleCommands(cmd) {
		if why := dangerOfCommand(words); why != "" {
			return why
		}
	}
	return ""
}
