//go:build unix

package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"conch/backend/host"
)

// The hosts verbs against a real serve: a host nothing listens at tests
// unreachable (exit 1), is listed, and is removed; a bad target is the
// server's sentence with exit 2; a name nobody has is exit 1.
func TestHostsVerbs(t *testing.T) {
	s := serve(t)
	if r := must(t, s.home, "hosts", "ls"); !strings.Contains(r.stdout, "No hosts.") {
		t.Fatalf("hosts ls on none printed %q", r.stdout)
	}
	if r := must(t, s.home, "hosts", "add", "Build Box", "127.0.0.1:1"); !strings.Contains(r.stdout, "Added Build Box (127.0.0.1:1)") ||
		!strings.Contains(r.stdout, "conch hosts test 'Build Box'") {
		t.Fatalf("hosts add printed %q", r.stdout)
	}
	if r := conch(t, s.home, "hosts", "add", "Build Box", "127.0.0.1:1"); r.code != 1 || !strings.Contains(r.stderr, "exists already") {
		t.Fatalf("adding it twice: %d %q", r.code, r.stderr)
	}
	r := conch(t, s.home, "hosts", "test", "Build Box")
	if r.code != 1 || !strings.Contains(r.stdout, "Build Box (127.0.0.1:1): unreachable") {
		t.Fatalf("hosts test of a port nothing listens on: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = conch(t, s.home, "hosts", "test", "build-box", "--json")
	var tr host.TestResult
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &tr) != nil || tr.Host.Status != "unreachable" || tr.Host.Reason == "" {
		t.Fatalf("hosts test --json by its id: %d %q", r.code, r.stdout)
	}
	var l host.List
	if err := json.Unmarshal([]byte(must(t, s.home, "hosts", "ls", "--json").stdout), &l); err != nil ||
		len(l.Hosts) != 1 || l.Hosts[0].ID != "build-box" || l.Hosts[0].Name != "Build Box" || l.Hosts[0].Status != "unreachable" || l.Runner == "" {
		t.Fatalf("hosts ls --json: %v %+v", err, l)
	}
	if r := must(t, s.home, "hosts", "ls"); !strings.Contains(r.stdout, "Build Box") || !strings.Contains(r.stdout, "unreachable") {
		t.Fatalf("hosts ls printed %q", r.stdout)
	}
	if r := conch(t, s.home, "hosts", "add", "evil", "--", "-oProxyCommand=true"); r.code != 2 || !strings.Contains(r.stderr, "hosts add evil:") || strings.Contains(r.stderr, "conch --help") {
		t.Fatalf("a target ssh would read as an option: %d %q", r.code, r.stderr)
	}
	if r := conch(t, s.home, "hosts", "accept", "Build Box", "nonsense"); r.code != 2 {
		t.Fatalf("accepting a fingerprint that is not one: %d %q", r.code, r.stderr)
	}
	if r := conch(t, s.home, "hosts", "accept", "Build Box", "SHA256:"+strings.Repeat("A", 43)); r.code != 1 || !strings.Contains(r.stderr, "hosts accept Build Box:") {
		t.Fatalf("accepting a key that does not wait: %d %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"hosts", "add", "x"}, {"hosts", "add", "---", "devbox"}, {"hosts", "rm"}, {"hosts", "test", "a", "b"}} {
		if r := conch(t, s.home, args...); r.code != 2 {
			t.Errorf("conch %q = %d %q, want 2", args, r.code, r.stderr)
		}
	}
	if r := must(t, s.home, "hosts", "rm", "Build Box"); !strings.Contains(r.stdout, "Removed Build Box.") {
		t.Fatalf("hosts rm printed %q", r.stdout)
	}
	for _, args := range [][]string{{"hosts", "rm", "Build Box"}, {"hosts", "test", "Build Box"}} {
		if r := conch(t, s.home, args...); r.code != 1 || !strings.Contains(r.stderr, `no host is called "Build Box"`) {
			t.Errorf("conch %q on a removed host = %d %q", args, r.code, r.stderr)
		}
	}
	if err := json.Unmarshal([]byte(must(t, s.home, "hosts", "ls", "--json").stdout), &l); err != nil || len(l.Hosts) != 0 {
		t.Fatalf("hosts ls --json after rm: %v %+v", err, l)
	}
	if r := conch(t, t.TempDir(), "hosts", "ls"); r.code != 3 {
		t.Fatalf("hosts ls with no Conch: %d %q", r.code, r.stderr)
	}
}

// A host's name completes from the running Conch.
func TestHostNamesComplete(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skipf("no fish here: %v", err)
	}
	s := serve(t)
	must(t, s.home, "hosts", "add", "devbox", "127.0.0.1:1")
	fish := exec.Command("fish", "--no-config", "-c", "'"+bin+"' completion fish | source; complete -C 'conch hosts test '")
	fish.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "CONCH_HOME="+s.home)
	out, err := fish.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "devbox\t127.0.0.1:1: not tested yet") {
		t.Fatalf("fish completed %v\n%s", err, out)
	}
}
