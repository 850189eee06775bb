package procmark

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEnvReplacesAnInheritedMark(t *testing.T) {
	base := []string{"PATH=/bin", EnvHome + "=parent", EnvTask + "=old", "HOME=/h"}
	got := Mark{Home: "mine", Task: "t1"}.Env(base)
	want := []string{"PATH=/bin", "HOME=/h", EnvHome + "=mine", EnvTask + "=t1"}
	if !slices.Equal(got, want) {
		t.Fatalf("env %q, want %q", got, want)
	}
}

func TestMatchesNeedsTheHomeAndEveryNamedPart(t *testing.T) {
	env := []byte("A=1\x00" + EnvHome + "=h1\x00" + EnvTask + "=t1\x00" + EnvChat + "=c1\x00")
	cases := []struct {
		m    Mark
		want bool
	}{
		{Mark{Home: "h1"}, true},
		{Mark{Home: "h1", Task: "t1"}, true},
		{Mark{Home: "h1", Task: "t1", Chat: "c1"}, true},
		{Mark{Home: "h2", Task: "t1"}, false}, // a copy of the home: same task id, other home
		{Mark{Home: "h1", Task: "t2"}, false},
		{Mark{Home: "h1", Chat: "c2"}, false},
		{Mark{Task: "t1"}, false}, // no home: never matches
		{Mark{Home: "h"}, false},  // a prefix is not the value
	}
	for _, c := range cases {
		if got := c.m.Matches(env); got != c.want {
			t.Errorf("%+v: %v, want %v", c.m, got, c.want)
		}
	}
}

func TestHomeMarkTellsACopyApart(t *testing.T) {
	a := t.TempDir()
	if err := os.WriteFile(filepath.Join(a, "conch.db"), []byte("same bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	if err := os.WriteFile(filepath.Join(b, "conch.db"), []byte("same bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	ma := HomeMark(a, filepath.Join(a, "conch.db"))
	again := HomeMark(a, filepath.Join(a, "conch.db"))
	mb := HomeMark(b, filepath.Join(b, "conch.db"))
	if ma == "" || ma != again || ma == mb {
		t.Fatalf("marks: %q %q %q", ma, again, mb)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if ml := HomeMark(link, filepath.Join(link, "conch.db")); ml != ma {
		t.Fatalf("the same home through a symlink has another mark: %q vs %q", ml, ma)
	}
}
