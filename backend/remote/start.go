package remote

import (
	"fmt"
	"strings"
)

// Start is how a host's runner is to be started: the conch binary copied
// there, its home and socket, and the unit name systemd-run gives it.
type Start struct {
	Bin, Home, Socket string
	// Unit names the systemd user unit (default conch-runner).
	Unit string
}

// Script is the POSIX sh script that starts the runner detached from the
// session that runs it: under `systemd-run --user` where the host's user
// manager answers and outlives the person's sessions (lingering: without
// it, logging out stops the manager and every unit under it), else in a
// session of its own (setsid) with its input
// closed and its output appended to runner.log in its home, so neither
// the SSH session's hangup nor its closed pipes reach it. It returns at
// once; the runner says it is up by answering on its socket.
func (s Start) Script() string {
	unit := s.Unit
	if unit == "" {
		unit = "conch-runner"
	}
	bin, home, sock := Quote(s.Bin), Quote(s.Home), Quote(s.Socket)
	run := fmt.Sprintf("%s runner --home %s --socket %s", bin, home, sock)
	return strings.Join([]string{
		"umask 077",
		// Out of the SSH session's sight: bash sources .bashrc for a plain
		// `bash -c` when it sees these (sshd ran it, it thinks), and a
		// task's shell would run the person's rc, exec zsh and all.
		"unset SSH_CLIENT SSH_CONNECTION SSH_TTY SSH_ORIGINAL_COMMAND SSH_AUTH_SOCK",
		"cd / || exit 1",
		"mkdir -p " + home + " || exit 1",
		"if " + Lingers + "; then",
		"  exec systemd-run --user --quiet --collect --unit=" + Quote(unit) + " --property=KillMode=mixed " + run,
		"fi",
		"setsid " + run + " </dev/null >>" + Quote(s.Home+"/runner.log") + " 2>&1 &",
	}, "\n") + "\n"
}

// Lingers is a sh test that the host's user manager runs units that
// outlive the user's sessions: systemd-run is there, the manager answers,
// and logind lingers the user.
const Lingers = `command -v systemd-run >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1 && [ "$(loginctl show-user "$(id -un)" -p Linger --value 2>/dev/null)" = yes ]`

// Command is the one line an SSH session runs on the host to start the
// runner: Script given to a plain `/bin/sh -c`, so the login shell only
// parses this line and hands over (exec); what its rc files set or print
// never reaches the script.
func (s Start) Command() string {
	return "exec /bin/sh -c " + Quote(s.Script())
}

// Quote is s as one single-quoted sh word.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
