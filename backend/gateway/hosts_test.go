//go:build linux

package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/errcode"
	"conch/backend/event"
	"conch/backend/gateway"
	"conch/backend/host"
	"conch/backend/remote/ssh"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/testrig/sshd"
)

// setupHosts starts a gateway over a hosts service whose ssh reads cfg.
func setupHosts(t *testing.T, cfg string) *env {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.New(ssh.Config{ConfigFile: cfg, KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), ControlDir: ctl, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hosts := host.New(host.Config{Store: st, SSH: c, Version: "1.2.3"})
	if err := hosts.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus()
	srv := httptest.NewUnstartedServer(nil)
	gw, err := gateway.New(gateway.Config{API: service.New(service.Config{Hosts: hosts}), Bus: bus, Token: token}, srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = gw
	srv.Start()
	t.Cleanup(func() {
		bus.Close()
		srv.Close()
		hosts.Stop()
		_ = st.Close()
		_ = os.RemoveAll(ctl)
	})
	return &env{srv: srv, base: srv.URL, bus: bus}
}

// call sends one request and decodes its answer into out.
func (e *env) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	res, raw := e.do(t, req{method: method, path: path, body: body})
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return res.StatusCode
}

// A host over HTTP, reached through a real sshd as a user
// of its own: added once (a second add is a 409, a bad target a 400), its
// unknown key shown and accepted by one of two clients at once (the other
// 409), then tested as that user in that home.
func TestAHostOverHTTP(t *testing.T) {
	s := sshd.Start(t, sshd.Options{})
	gw := setupHosts(t, s.Config)

	for _, body := range []string{`{"target":"-oProxyCommand=id"}`, `{"target":""}`, `{"target":"me@box:0"}`, `{"target":"box","limits":{"background":0,"helper":4}}`, `{"target":"box","x":1}`} {
		var bad errcode.Body
		if code := gw.call(t, "PUT", "/api/hosts/devbox", body, &bad); code != http.StatusBadRequest || bad.Error.Message == "" {
			t.Fatalf("PUT %s: %d %+v", body, code, bad)
		}
	}
	var h store.Host
	if code := gw.call(t, "PUT", "/api/hosts/devbox", `{"target":"`+s.Alias+`"}`, &h); code != http.StatusCreated || h.Limits != host.DefaultLimits {
		t.Fatalf("add: %d %+v", code, h)
	}
	if code := gw.call(t, "PUT", "/api/hosts/devbox", `{"target":"`+s.Alias+`"}`, nil); code != http.StatusConflict {
		t.Fatalf("a second add: %d", code)
	}
	var r host.TestResult
	if code := gw.call(t, "POST", "/api/hosts/devbox/test", "", &r); code != http.StatusOK || r.Host.Status != store.HostUnknownKey || r.Host.Fingerprint != s.Fingerprint() {
		t.Fatalf("test an unknown key: %d %+v", code, r.Host)
	}
	var bad errcode.Body
	if code := gw.call(t, "POST", "/api/hosts/devbox/accept-key", `{"fingerprint":"md5:x"}`, &bad); code != http.StatusBadRequest {
		t.Fatalf("a bad fingerprint: %d %+v", code, bad)
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i] = gw.call(t, "POST", "/api/hosts/devbox/accept-key", `{"fingerprint":"`+s.Fingerprint()+`"}`, nil)
		})
	}
	wg.Wait()
	if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
		t.Fatalf("two accepts at once: %v, want one 200 and one 409", codes)
	}
	if code := gw.call(t, "POST", "/api/hosts/devbox/test", "", &r); code != http.StatusOK || r.Host.Status != store.HostReady ||
		r.Host.User != s.User || r.Host.Home != s.Home || !strings.HasPrefix(r.Host.System, "Linux") {
		t.Fatalf("test: %d %+v", code, r.Host)
	}
	var l host.List
	if code := gw.call(t, "GET", "/api/hosts", "", &l); code != http.StatusOK || len(l.Hosts) != 1 || l.Hosts[0].Status != store.HostReady {
		t.Fatalf("list: %d %+v", code, l)
	}
	if code := gw.call(t, "DELETE", "/api/hosts/devbox", "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code := gw.call(t, "DELETE", "/api/hosts/devbox", "", nil); code != http.StatusNotFound {
		t.Fatalf("second delete: %d", code)
	}
}
