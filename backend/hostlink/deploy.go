package hostlink

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"conch/backend/client"
	"conch/backend/remote"
	"conch/backend/remote/ssh"
	"conch/backend/task"
)

// RunnerDir is the runner's folder in the host user's home: one folder per
// version holding its build (conch), its home (home) and, where the user's
// runtime folder is not kept while they are logged out, its socket (run).
const RunnerDir = ".conch-remote"

// found is what the probe found on a host.
type found struct {
	arch, home, sock string
	// sum is the SHA-256 of the build of this version there ("": none).
	sum string
	// live is the pid of the runner serving on sock (0: none).
	live int
}

// probe is the script that finds them, one tab-separated fact a line. The
// socket goes in the runtime folder only where the user lingers (where
// logging out empties it, a runner there would lose its socket).
func probe(version string) string {
	return `r="$HOME/` + RunnerDir + `"
bin="$r/` + version + `/conch"
printf 'arch\t%s\n' "$(uname -sm)"
printf 'home\t%s\n' "$HOME"
if [ -x "$bin" ]; then
  printf 'sum\t%s\n' "$( { sha256sum "$bin" 2>/dev/null || shasum -a 256 "$bin"; } | cut -d ' ' -f 1)"
fi
sock="$r/run/runner.sock"
if [ -n "$XDG_RUNTIME_DIR" ] && [ -d "$XDG_RUNTIME_DIR" ] && ` + remote.Lingers + `; then
  sock="$XDG_RUNTIME_DIR/conch/runner.sock"
fi
printf 'sock\t%s\n' "$sock"
if [ -S "$sock" ] && pid=$(cat "$sock.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
  printf 'live\t%s\n' "$pid"
fi
`
}

func parseFound(out string) (found, error) {
	var f found
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, "\t")
		switch k {
		case "arch":
			f.arch = v
		case "home":
			f.home = v
		case "sum":
			f.sum = v
		case "sock":
			f.sock = v
		case "live":
			f.live, _ = strconv.Atoi(v)
		}
	}
	if f.home == "" || !strings.HasPrefix(f.home, "/") || f.sock == "" {
		return found{}, fmt.Errorf("the host's shell did not say where its home is (it printed %q)", out)
	}
	sys := f.arch
	switch {
	case strings.HasPrefix(sys, "Linux ") && strings.HasSuffix(sys, "x86_64"):
		f.arch = "amd64"
	case strings.HasPrefix(sys, "Linux ") && (strings.HasSuffix(sys, "aarch64") || strings.HasSuffix(sys, "arm64")):
		f.arch = "arm64"
	default:
		return found{}, fmt.Errorf("Conch's runner is built for Linux on x86_64 and arm64; this host is %q", sys)
	}
	return f, nil
}

// connect puts the runner of this version on the host if it is not there,
// starts it unless it serves already, forwards its socket here and reads
// its token: a client that answers, or why not.
func (l *Links) connect(ctx context.Context, id string) (*runner, error) {
	res, err := l.cfg.Hosts.Run(ctx, id, probe(l.cfg.Version))
	if err != nil {
		return nil, err
	}
	f, err := parseFound(string(res.Stdout))
	if err != nil {
		return nil, err
	}
	dir := f.home + "/" + RunnerDir + "/" + l.cfg.Version
	bin := dir + "/conch"
	if err := l.put(ctx, id, f, dir); err != nil {
		return nil, err
	}
	start := remote.Start{Bin: bin, Home: f.home + "/" + RunnerDir + "/home", Socket: f.sock}
	token, err := l.start(ctx, id, start, f.live == 0)
	if err != nil {
		return nil, err
	}
	local := l.socketOf(id)
	if err := os.MkdirAll(l.cfg.SocketDir, 0o700); err != nil {
		return nil, err
	}
	if err := l.cfg.Hosts.Forward(ctx, id, local, f.sock); err != nil {
		return nil, err
	}
	c := client.DialSocket(local, token)
	var about about
	if err := c.Do(ctx, http.MethodGet, "/api/about", nil, &about); err != nil {
		return nil, fmt.Errorf("the runner on %s does not answer: %w", id, err)
	}
	if about.Version != l.cfg.Version && f.live != 0 {
		if c, err = l.upgrade(ctx, id, c, start, about.Version); err != nil {
			return nil, err
		}
	}
	return &runner{Client: c, home: f.home}, nil
}

// put copies this computer's build for the host's arch to dir there,
// unless the build there has its checksum; the copy is checked there
// before it takes the build's place.
func (l *Links) put(ctx context.Context, id string, f found, dir string) error {
	path, sum, err := l.cfg.Builds(f.arch)
	if err != nil {
		return err
	}
	if f.sum == sum {
		return nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open the runner's build: %w", err)
	}
	defer fh.Close()
	script := `umask 077
d=` + remote.Quote(dir) + `
mkdir -p "$d" || exit 1
tmp="$d/conch.part.$$"
cat > "$tmp" || exit 1
got=$( { sha256sum "$tmp" 2>/dev/null || shasum -a 256 "$tmp"; } | cut -d ' ' -f 1)
if [ "$got" != ` + remote.Quote(sum) + ` ]; then rm -f "$tmp"; echo "the copy's checksum is $got" >&2; exit 3; fi
chmod 755 "$tmp" && mv -f "$tmp" "$d/conch"
`
	res, err := l.cfg.Hosts.RunInput(ctx, id, script, fh)
	if err != nil {
		return fmt.Errorf("copy Conch's runner to %s: %w", id, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("copy Conch's runner to %s: it did not arrive whole (%s)", id, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// start starts the runner (when fresh: none serves) and waits for its
// socket; it returns the runner's token.
func (l *Links) start(ctx context.Context, id string, s remote.Start, fresh bool) (string, error) {
	var script strings.Builder
	if fresh {
		// In a subshell: its systemd-run execs, and the wait follows.
		script.WriteString("(\n" + s.Script() + ")\n")
	}
	// Wait up to 10 s for the socket, then say what the runner logged.
	fmt.Fprintf(&script, `i=0
while ! [ -S %[1]s ] || ! [ -s %[2]s ]; do
  i=$((i+1))
  if [ $i -gt 100 ]; then tail -n 5 %[3]s >&2; exit 3; fi
  sleep 0.1
done
cat %[2]s
`, remote.Quote(s.Socket), remote.Quote(s.Home+"/gateway-token"), remote.Quote(s.Home+"/runner.log"))
	res, err := l.cfg.Hosts.Run(ctx, id, script.String())
	if err != nil {
		return "", fmt.Errorf("start Conch's runner on %s: %w", id, err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("Conch's runner on %s did not start: %s", id, ssh.FirstLine(string(res.Stderr)))
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// upgrade replaces the runner of another version serving on the host,
// when no task works there; one with work goes on as it is until it has
// none (a later connection upgrades it).
func (l *Links) upgrade(ctx context.Context, id string, c *client.Client, s remote.Start, was string) (*client.Client, error) {
	var list struct {
		Counts map[task.Status]int `json:"counts"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/tasks?limit=1", nil, &list); err != nil {
		return nil, err
	}
	if list.Counts[task.Running]+list.Counts[task.NeedsYou]+list.Counts[task.Queued] > 0 {
		l.cfg.Log.Info("the runner on a host is older, and busy: left as it is", "host", id, "runner", was)
		return c, nil
	}
	l.cfg.Log.Info("replacing the runner on a host", "host", id, "runner", was, "with", l.cfg.Version)
	// SIGTERM ends it as a local Conch ends; its socket goes first.
	script := `pid=$(cat ` + remote.Quote(s.Socket+remote.PidSuffix) + ` 2>/dev/null) && kill "$pid" 2>/dev/null
i=0
while [ -S ` + remote.Quote(s.Socket) + ` ] && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.1; done
`
	if _, err := l.cfg.Hosts.Run(ctx, id, script); err != nil {
		return nil, err
	}
	token, err := l.start(ctx, id, s, true)
	if err != nil {
		return nil, err
	}
	nc := client.DialSocket(l.socketOf(id), token)
	var about about
	if err := nc.Do(ctx, http.MethodGet, "/api/about", nil, &about); err != nil {
		return nil, fmt.Errorf("the runner on %s does not answer after its upgrade from %s: %w", id, was, err)
	}
	return nc, nil
}

// BuildsEnv names a folder holding the runner's builds
// (conch-linux-<arch> with conch-linux-<arch>.sha256 beside each), looked
// in first.
const BuildsEnv = "CONCH_REMOTE_BUILDS"

// FindBuilds finds the runner's builds of version: in $CONCH_REMOTE_BUILDS,
// then where a package puts them beside Conch (a Linux package's
// ../lib/conch/remote from the binary, Conch.app's ../Resources/remote:
// the package's own version), then where make remote leaves them in a
// checkout (build/remote/<version>, beside build/bin).
func FindBuilds(version string) func(arch string) (string, string, error) {
	return func(arch string) (string, string, error) {
		var dirs []string
		if d := os.Getenv(BuildsEnv); d != "" {
			dirs = append(dirs, d)
		}
		if exe, err := os.Executable(); err == nil {
			if real, err := filepath.EvalSymlinks(exe); err == nil {
				exe = real
			}
			bin := filepath.Dir(exe)
			dirs = append(dirs,
				filepath.Join(bin, "..", "lib", "conch", "remote"), // a Linux package: /usr/bin, /usr/lib/conch/remote
				filepath.Join(bin, "..", "Resources", "remote"),    // Conch.app: Contents/MacOS, Contents/Resources/remote
				filepath.Join(bin, "..", "remote", version))        // a checkout: build/bin, build/remote/<version>
		}
		name := "conch-linux-" + arch
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, name+".sha256"))
			if err != nil {
				continue
			}
			sum := strings.Fields(string(b))
			if len(sum) == 0 || len(sum[0]) != 64 {
				return "", "", fmt.Errorf("%s has no SHA-256 in it", filepath.Join(d, name+".sha256"))
			}
			path := filepath.Join(d, name)
			if _, err := os.Stat(path); err != nil {
				return "", "", fmt.Errorf("the runner's build is missing beside its checksum: %w", err)
			}
			return path, sum[0], nil
		}
		return "", "", fmt.Errorf("Conch's runner for Linux on %s (version %s) is not with this Conch: build it with make remote, or name a folder of builds in %s", arch, version, BuildsEnv)
	}
}

// about is as much of GET /api/about as a link reads.
type about struct {
	Version string `json:"version"`
}
