package ssh

import (
	"errors"
	"testing"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
	}{
		{"devbox", Target{Host: "devbox"}},
		{"me@devbox", Target{Host: "devbox", User: "me"}},
		{"me@10.0.0.2:2222", Target{Host: "10.0.0.2", User: "me", Port: 2222}},
		{"box.example.com:22", Target{Host: "box.example.com", Port: 22}},
		{"me@[::1]:2200", Target{Host: "::1", User: "me", Port: 2200}},
		{"[fe80::1]", Target{Host: "fe80::1"}},
	} {
		got, err := ParseTarget(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if back, err := ParseTarget(got.String()); err != nil || back != got {
			t.Errorf("%q written back as %q reads %+v, %v", tc.in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "-oProxyCommand=sh", "me@-p", "a b", "host:0", "host:65536", "host:x", "host:",
		"::1", "[::1", "[1.2.3.4]", "[::1]x", "me@", "@host", "ho'st", "host\n", "me@@host", "a;b", "$(id)", "host:22:33"} {
		if _, err := ParseTarget(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseTarget(%q) = %v, want ErrInvalid", in, err)
		}
	}
}
