package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// maxFetch bounds how much of a page fetch_url reads.
const maxFetch = 256 << 10

var fetchURL = Tool{
	Name:        "fetch_url",
	Description: "Fetch a web page or file over http(s) and answer its text (at most 256 KiB). What it reads comes from outside, so the chat is marked as tainted afterwards.",
	Schema:      schema([]string{"url"}, `"url":{"type":"string","description":"an http or https URL"}`),
	Effect:      Network,
	Title:       titleOf("Fetch", "url"),
	Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			URL string `json:"url"`
		}
		if err := decode("fetch_url", args, &a, "url"); err != nil {
			return "", err
		}
		u, err := url.Parse(a.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("fetch_url: %q is not an http or https URL", a.URL)
		}
		client := env.HTTP
		if client == nil {
			client = publicClient
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", fmt.Errorf("fetch_url: %w", err)
		}
		req.Header.Set("User-Agent", "Conch")
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("fetch %s: %w", u.Redacted(), err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxFetch+1))
		if err != nil {
			return "", fmt.Errorf("fetch %s: read: %w", u.Redacted(), err)
		}
		more := len(b) > maxFetch
		if more {
			b = b[:maxFetch]
		}
		if isBinary(b) {
			return "", fmt.Errorf("fetch %s: the answer is binary (%s)", u.Redacted(), resp.Header.Get("Content-Type"))
		}
		text := strings.ToValidUTF8(string(b), "\uFFFD")
		if more {
			text += fmt.Sprintf("\n… (only the first %d KiB were read)", maxFetch>>10)
		}
		head := fmt.Sprintf("HTTP %d from %s (%s)\n\n", resp.StatusCode, u.Redacted(), resp.Header.Get("Content-Type"))
		if resp.StatusCode >= 400 {
			return "", errors.New(head + text)
		}
		return head + text, nil
	},
}

// publicClient reaches only public addresses: a model must not use Conch to
// read this computer's own services or the local network.
var publicClient = &http.Client{
	Timeout: 60 * time.Second,
	Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout: 15 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				host, _, err := net.SplitHostPort(address)
				if err != nil {
					return err
				}
				ip, err := netip.ParseAddr(host)
				if err != nil {
					return err
				}
				if !PublicAddr(ip) {
					return fmt.Errorf("%s is a local or private address; fetch_url reaches only public ones", ip)
				}
				return nil
			},
		}).DialContext,
		TLSHandshakeTimeout: 15 * time.Second,
	},
}

// PublicAddr reports whether ip is an address on the public internet.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() &&
		!ip.IsLinkLocalMulticast() && !ip.IsUnspecified() && !ip.IsMulticast() && !ip.IsInterfaceLocalMulticast()
}
