//go:build linux

package sshd

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is the OpenSSH server the rig starts.
const Binary = "/usr/sbin/sshd"

// Options shape the host a test gets.
type Options struct {
	// Shell is the user's login shell ("": /bin/bash).
	Shell string
	// RC are files written into the user's home before it logs in, by
	// name (".bashrc": "echo hello; exec zsh"): a login shell that prints
	// text and execs another shell, as people's do.
	RC map[string]string
	// NoKey leaves the client key out of the authorized keys: the server
	// offers only a password, which a BatchMode client never types.
	NoKey bool
}

// Server is one running sshd and what a client needs to reach it.
type Server struct {
	// Alias is the Host the client config names; Config is that file.
	Alias  string
	Config string
	// KnownHosts is the known_hosts file Config names, empty at first:
	// the server's key is unknown until a test writes it.
	KnownHosts string
	// Port is where sshd listens on 127.0.0.1.
	Port int
	// User, UID and Home are the Unix user the client logs in as.
	User string
	UID  int
	Home string
	// Dir holds the server's and the client's files.
	Dir string

	t       TB
	mu      sync.Mutex
	cmd     *exec.Cmd
	logs    *strings.Builder
	hostKey string
}

// TB is what the rig needs of a test: testing.TB has it, and a command
// that serves a host for the browser tests (sshhost) has its own.
type TB interface {
	Helper()
	Cleanup(func())
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
}

var _ TB = testing.TB(nil)

// Start runs an sshd for t, stopped (and its user removed) when t ends.
func Start(t TB, o Options) *Server {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sshd rig makes a Unix user for the host, which needs root; run the tests as root to include it")
	}
	for _, bin := range []string{Binary, "ssh", "ssh-keygen", "useradd", "userdel"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("the sshd rig needs %s, which is missing: run scripts/setup --test (Debian packages openssh-server and passwd)", bin)
		}
	}
	dir, err := os.MkdirTemp("", "conch-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	// sshd reads the authorized keys as the user: the folder must be
	// open to it, as a home's would be.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{t: t, Dir: dir, Alias: "host-" + token(4)}
	s.makeUser(o)
	s.keys(o)
	s.Port = freePort(t)
	s.writeConfigs(o)
	s.start()
	t.Cleanup(s.stop)
	return s
}

// token is n random bytes in hex.
func token(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) run(name string, args ...string) string {
	s.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeUser adds a Unix user of the test's own, removed when it ends.
func (s *Server) makeUser(o Options) {
	s.User = "ct" + token(4)
	shell := o.Shell
	if shell == "" {
		shell = "/bin/bash"
	}
	s.run("useradd", "-m", "-s", shell, s.User)
	s.t.Cleanup(func() {
		killUser(s.UID)
		_ = exec.Command("userdel", "-r", "-f", s.User).Run()
	})
	// A locked password ("!") makes sshd refuse the account without PAM;
	// "*" has no password but is not locked.
	s.run("usermod", "-p", "*", s.User)
	u, err := user.Lookup(s.User)
	if err != nil {
		s.t.Fatal(err)
	}
	s.UID, _ = strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.Home = u.HomeDir
	for name, text := range o.RC {
		p := filepath.Join(s.Home, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			s.t.Fatal(err)
		}
		_ = os.Chown(p, s.UID, gid)
	}
}

// keys makes the host key and the client key, and authorizes the client's
// unless o says not to.
func (s *Server) keys(o Options) {
	s.hostKey = filepath.Join(s.Dir, "host_ed25519")
	s.newHostKey()
	client := filepath.Join(s.Dir, "client_ed25519")
	s.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "conch-test", "-f", client)
	auth := filepath.Join(s.Dir, "authorized_keys")
	pub := ""
	if !o.NoKey {
		b, err := os.ReadFile(client + ".pub")
		if err != nil {
			s.t.Fatal(err)
		}
		pub = string(b)
	}
	if err := os.WriteFile(auth, []byte(pub), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) newHostKey() {
	_ = os.Remove(s.hostKey)
	_ = os.Remove(s.hostKey + ".pub")
	s.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "conch-test-host", "-f", s.hostKey)
}

// freePort is a loopback port nothing listens on now.
func freePort(t TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) writeConfigs(o Options) {
	pw := "no"
	if o.NoKey {
		pw = "yes"
	}
	server := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile none
UsePAM no
StrictModes no
PermitRootLogin no
AllowUsers %s
PubkeyAuthentication yes
PasswordAuthentication %s
KbdInteractiveAuthentication no
AuthorizedKeysFile %s
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
`, s.Port, s.hostKey, s.User, pw, filepath.Join(s.Dir, "authorized_keys"))
	s.write("sshd_config", server, 0o644)
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	s.write("known_hosts", "", 0o644)
	s.Config = filepath.Join(s.Dir, "ssh_config")
	client := fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
`, s.Alias, s.Port, s.User, filepath.Join(s.Dir, "client_ed25519"), s.KnownHosts)
	s.write("ssh_config", client, 0o644)
}

func (s *Server) write(name, text string, mode os.FileMode) {
	if err := os.WriteFile(filepath.Join(s.Dir, name), []byte(text), mode); err != nil {
		s.t.Fatal(err)
	}
}

// start runs sshd and waits until it listens.
func (s *Server) start() {
	s.t.Helper()
	// sshd wants its privilege separation folder; the package's service
	// would have made it.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(Binary, "-D", "-e", "-f", filepath.Join(s.Dir, "sshd_config"))
	logs := &strings.Builder{}
	pr, pw, err := os.Pipe()
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	pw.Close()
	listening := make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if strings.Contains(sc.Text(), "Server listening") {
				once.Do(func() { close(listening) })
			}
		}
	}()
	s.mu.Lock()
	s.cmd, s.logs = cmd, logs
	s.mu.Unlock()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		s.stop()
		s.t.Fatalf("sshd did not listen on 127.0.0.1:%d within 10s:\n%s", s.Port, s.Logs())
	}
}

// Logs is what sshd wrote so far.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		return ""
	}
	return s.logs.String()
}

// HostKey is the server's public host key, as a known_hosts line's key
// part ("ssh-ed25519 AAAA…").
func (s *Server) HostKey() string {
	b, err := os.ReadFile(s.hostKey + ".pub")
	if err != nil {
		s.t.Fatal(err)
	}
	f := strings.Fields(string(b))
	return f[0] + " " + f[1]
}

// Fingerprint is the host key's SHA256 fingerprint ("SHA256:…").
func (s *Server) Fingerprint() string {
	f := strings.Fields(s.run("ssh-keygen", "-lf", s.hostKey+".pub"))
	return f[1]
}

// RotateHostKey gives the server a new host key and restarts it on the
// same port, as a reinstalled (or impersonated) host would look.
func (s *Server) RotateHostKey() {
	s.t.Helper()
	s.stop()
	s.newHostKey()
	s.start()
}

// stop ends sshd and every process serving or started by its sessions.
func (s *Server) stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	pids := descendants(cmd.Process.Pid)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = cmd.Wait()
	killUser(s.UID)
}

// descendants are the processes below pid (sshd's sessions call setsid,
// so its process group does not hold them).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppid(p); ok {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func ppid(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// killUser ends every process running as uid (the test's own user, so
// nothing of anyone else's).
func killUser(uid int) {
	if uid < 1000 {
		return
	}
	for range 100 {
		ps := Processes(uid)
		if len(ps) == 0 {
			return
		}
		for _, p := range ps {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Processes are the pids running as uid now, read from /proc.
func Processes(uid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == uid && !zombie(p) {
			out = append(out, p)
		}
	}
	return out
}

// zombie is a process that ended and waits to be reaped: it runs nothing.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// DropConnections ends every connection sshd serves now, as a network
// that drops would: the sshd processes serving them are killed, and what
// their sessions started in sessions of its own runs on. It returns how
// many it ended.
func (s *Server) DropConnections() int {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	n := 0
	for _, p := range descendants(cmd.Process.Pid) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); err == nil && strings.TrimSpace(string(b)) == "sshd" {
			if syscall.Kill(p, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// Cmdline is pid's command line, its arguments joined by spaces ("": it
// is gone).
func Cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// Down takes the server off the network, as a host that went away would
// look: sshd and every connection it serves end, while what the user's
// sessions started in sessions of their own runs on. Up brings it back.
func (s *Server) Down() {
	s.t.Helper()
	s.DropConnections()
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// Up starts sshd again on its port, with its key, after Down.
func (s *Server) Up() {
	s.t.Helper()
	s.start()
}

// Put writes what r holds to the file rel (a slash path under the
// user's home), making its folders, all owned by the user, as if they had
// put it there themselves.
func (s *Server) Put(rel string, r io.Reader, mode os.FileMode) {
	s.t.Helper()
	u, err := user.Lookup(s.User)
	if err != nil {
		s.t.Fatal(err)
	}
	gid, _ := strconv.Atoi(u.Gid)
	p := filepath.Join(s.Home, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	for d := filepath.Dir(p); d != s.Home && strings.HasPrefix(d, s.Home); d = filepath.Dir(d) {
		if err := os.Chown(d, s.UID, gid); err != nil {
			s.t.Fatal(err)
		}
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err == nil {
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Chown(p, s.UID, gid)
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

// InstallCLI puts the program at src in the user's ~/.local/lib/name and
// a command of that name in ~/.local/bin (where installers put them, off
// a plain sh's PATH) that runs it with env set: the user's own sign-in
// and settings for it. HOME, TMPDIR and XDG_CONFIG_HOME in env are left
// out; the user's own hold.
func (s *Server) InstallCLI(name, src string, env []string) {
	s.t.Helper()
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		s.t.Fatal(err)
	}
	f, err := os.Open(real)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	s.Put(".local/lib/"+name+"/"+name, f, 0o755)
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "TMPDIR", "XDG_CONFIG_HOME":
		default:
			sh.WriteString("export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'\n")
		}
	}
	sh.WriteString(`exec "$HOME/.local/lib/` + name + `/` + name + `" "$@"` + "\n")
	s.Put(".local/bin/"+name, strings.NewReader(sh.String()), 0o755)
}

// As runs script with sh as the user, in their home, and returns what it
// printed; a failure fails the test.
func (s *Server) As(script string) string {
	s.t.Helper()
	cmd := exec.Command("runuser", "-u", s.User, "--", "sh", "-c", script)
	cmd.Dir = s.Home
	cmd.Env = []string{"HOME=" + s.Home, "USER=" + s.User, "PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("as %s: %s: %v\n%s", s.User, script, err, out)
	}
	return string(out)
}
