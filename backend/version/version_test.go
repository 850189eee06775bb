package version

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

func TestStampedValuesWinOverTheBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.9"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "ffffffffffffffffffffffffffffffffffffffff"},
		{Key: "vcs.time", Value: "2020-01-01T00:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := resolve("0.1.0", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", "2025-06-01T10:00:00Z", bi)
	want := Info{Version: "0.1.0", Commit: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", Date: "2025-06-01T10:00:00Z", Go: "go1.26.8", Platform: got.Platform}
	if got != want {
		t.Fatalf("resolve = %+v, want %+v", got, want)
	}
	if s := got.String(); s != "conch 0.1.0 (commit 1a2b3c4d5e6f, built 2025-06-01T10:00:00Z)" {
		t.Fatalf("String = %q", s)
	}
}

func TestAnUnstampedBuildSaysWhatGoRecorded(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20250601100000-1a2b3c4d5e6f+dirty"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b"},
		{Key: "vcs.time", Value: "2025-06-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := resolve("", "", "", bi)
	if got.Version != "0.1.1-0.20250601100000-1a2b3c4d5e6f+dirty" || got.Commit != "1a2b3c4d5e6f7a8b" || !got.Modified {
		t.Fatalf("resolve = %+v", got)
	}
	if s := got.String(); s != "conch 0.1.1-0.20250601100000-1a2b3c4d5e6f+dirty (commit 1a2b3c4d5e6f, modified, built 2025-06-01T10:00:00Z)" {
		t.Fatalf("String = %q", s)
	}
}

func TestABuildThatKnowsNothingIsDev(t *testing.T) {
	for _, bi := range []*debug.BuildInfo{nil, {Main: debug.Module{Version: "(devel)"}}} {
		got := resolve("", "", "", bi)
		if got.Version != Dev || got.Commit != "" || got.Date != "" || got.Go == "" || got.Platform == "" {
			t.Fatalf("resolve(%v) = %+v", bi, got)
		}
		if s := got.String(); s != "conch dev" {
			t.Fatalf("String = %q, want conch dev", s)
		}
	}
}

func TestInfoIsCamelCaseJSON(t *testing.T) {
	b, err := json.Marshal(Info{Version: "0.1.0", Commit: "abc", Date: "d", Go: "go1.26.8", Platform: "linux/amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":"0.1.0","commit":"abc","date":"d","go":"go1.26.8","platform":"linux/amd64"}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
}

// The test binary is built by go test, which stamps nothing.
func TestGetInATestIsNotEmpty(t *testing.T) {
	i := Get()
	if i.Version == "" || !strings.HasPrefix(i.Go, "go") {
		t.Fatalf("Get = %+v", i)
	}
}
