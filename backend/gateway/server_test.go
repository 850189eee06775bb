package gateway_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"conch/backend/gateway"
)

// A local process that opens many connections and sends nothing, or sends
// a request slowly, cannot starve the server: they are closed (by the
// timeouts, or to make room at the cap) while signed-in requests keep
// answering.
func TestIdleAndSlowConnectionsAreClosedWhileRequestsAnswer(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := gateway.NewServer(ok, nil, gateway.Limits{
		ReadHeaderTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, IdleTimeout: 500 * time.Millisecond, MaxConns: 32,
	})
	ln, _, err := gateway.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()

	// 200 connections that say nothing, and 20 that send half a request.
	var idle []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nX-Slow: ", addr)
		idle = append(idle, c)
	}
	t.Cleanup(func() {
		for _, c := range idle {
			_ = c.Close()
		}
	})
	if n := srv.Open(); n > 32 {
		t.Fatalf("%d connections open, the cap is 32", n)
	}
	// Signed-in requests answer meanwhile: four clients (a few tabs, a
	// script), each request on a new connection.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				r, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
				r.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(r)
				if err != nil {
					errs <- err
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "ok" {
					errs <- fmt.Errorf("%d %q", resp.StatusCode, b)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a signed-in request failed while the idle ones waited: %v", err)
	}
	// Every idle and slow connection is closed by the server before long.
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range idle {
		_ = c.SetReadDeadline(deadline)
		_, err := bufio.NewReader(c).ReadString('\n')
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("an idle connection was still open after 5 s")
		}
	}
	// A kept-alive connection that goes quiet is closed too.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, token)
	rd := bufio.NewReader(c)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("keep-alive request: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rd.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("an idle kept-alive connection stayed open: %v", err)
	}
}

func TestListenTakesOnlyLoopbackUnlessAllowed(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		ln, _, err := gateway.Listen(addr, false)
		if err == nil {
			ln.Close()
			t.Fatalf("%s was taken without --allow-remote", addr)
		}
		if !errors.Is(err, gateway.ErrRemote) || !strings.Contains(err.Error(), "every network interface") || !strings.Contains(err.Error(), "--allow-remote") {
			t.Fatalf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		ln, hosts, err := gateway.Listen(addr, false)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		ln.Close()
		if len(hosts) != 0 {
			t.Fatalf("%s: hosts beyond loopback %v", addr, hosts)
		}
	}
	ln, hosts, err := gateway.Listen("0.0.0.0:0", true)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if len(hosts) == 0 {
		t.Fatal("--allow-remote on every interface names no host to answer as")
	}
	if _, _, err := gateway.Listen("nonsense", false); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("no port: %v", err)
	}
}
