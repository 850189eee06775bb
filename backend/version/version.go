// Package version is the one place Conch's version is kept: the number,
// the commit and the build date, stamped into a release build with
//
//	go build -ldflags "-X conch/backend/version.Version=0.1.0 \
//	    -X conch/backend/version.Commit=<sha> -X conch/backend/version.Date=<RFC 3339>"
//
// (the Makefile's build does it with scripts/version's number). A build
// without them (`go run`, `go test`, a plain `go build`) falls back to what
// Go recorded of the checkout, else "dev".
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version, Commit and Date are stamped at build time; empty means not
// stamped, and Get fills them in from the build info.
var (
	// Version is the release number without a leading v, as scripts/version
	// prints it: "0.1.0", or "0.1.0-dev+1a2b3c4d" between releases.
	Version = ""
	// Commit is the full git commit the binary was built from.
	Commit = ""
	// Date is when the binary was built, in RFC 3339 (UTC).
	Date = ""
)

// AppID is Conch's id on a desktop: the desktop entry is AppID+".desktop"
// (the .deb's, the autostart entry's), and the AppStream component, the
// icon and the notifications' desktop-entry hint are AppID.
const AppID = "dev.conch"

// Dev is the version of a build that knows nothing better.
const Dev = "dev"

// Info is what `conch version` says, and its --json form.
type Info struct {
	// Version is the release number ("0.1.0"), or Dev.
	Version string `json:"version"`
	// Commit is the git commit, empty when unknown.
	Commit string `json:"commit,omitempty"`
	// Date is the build date (RFC 3339), empty when unknown.
	Date string `json:"date,omitempty"`
	// Modified says the checkout had changes no commit holds (only known
	// from Go's build info, never for a stamped build).
	Modified bool `json:"modified,omitempty"`
	// Go is the Go toolchain that built it ("go1.26.8").
	Go string `json:"go"`
	// Platform is the system and architecture ("linux/amd64").
	Platform string `json:"platform"`
}

// Get returns this binary's version: what was stamped, else what Go's
// build info recorded of the checkout, else Dev.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, Date, bi)
}

// String is Get in one line: "conch 0.1.0 (commit 1a2b3c4d5e6f, built
// 2025-06-01T10:00:00Z)".
func String() string { return Get().String() }

// String says the version in one line, as `conch version` prints it.
func (i Info) String() string {
	var extra []string
	if i.Commit != "" {
		c := short(i.Commit)
		if i.Modified {
			c += ", modified"
		}
		extra = append(extra, "commit "+c)
	}
	if i.Date != "" {
		extra = append(extra, "built "+i.Date)
	}
	s := "conch " + i.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// resolve fills what was not stamped from bi (nil when the binary has no
// build info).
func resolve(ver, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: ver, Commit: commit, Date: date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	stamped := ver != ""
	if bi != nil {
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		if info.Version == "" {
			info.Version = fromModule(bi.Main.Version)
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = !stamped && s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = Dev
	}
	return info
}

// fromModule turns the main module's version, as Go derives it from the
// checkout's tags ("v0.1.0", "v0.1.1-0.20250601100000-1a2b3c4d5e6f+dirty"),
// into a release number; "(devel)" and empty, a build Go knew nothing of,
// give "".
func fromModule(v string) string {
	if v == "" || v == "(devel)" {
		return ""
	}
	return strings.TrimPrefix(v, "v")
}

// short is a commit's first 12 hex digits.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
