package version

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Linux packages' files (build/linux) must agree with wails.json's
// number and with one another: the AppStream id, the desktop entry, the
// icon and the sizes scripts/dist draws.

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTheMetainfosNewestReleaseIsWailsJSONs(t *testing.T) {
	var c struct {
		ID         string `xml:"id"`
		Launchable string `xml:"launchable"`
		Icon       string `xml:"icon"`
		Releases   []struct {
			Version string `xml:"version,attr"`
			Date    string `xml:"date,attr"`
		} `xml:"releases>release"`
		Screenshots []string `xml:"screenshots>screenshot>image"`
	}
	if err := xml.Unmarshal([]byte(readFile(t, "build/linux/"+AppID+".metainfo.xml")), &c); err != nil {
		t.Fatalf("metainfo: %v", err)
	}
	if c.ID != AppID || c.Launchable != AppID+".desktop" || c.Icon != AppID {
		t.Errorf("metainfo id %q, launchable %q, icon %q; want %s, %s.desktop, %s", c.ID, c.Launchable, c.Icon, AppID, AppID, AppID)
	}
	base := productVersion(t, root)
	if len(c.Releases) == 0 || c.Releases[0].Version != base {
		t.Fatalf("metainfo's newest release is %+v, want %s (wails.json): a release adds its <release> on top", c.Releases, base)
	}
	if !strings.Contains(readFile(t, "CHANGELOG.md"), "## ["+base+"] - "+c.Releases[0].Date) {
		t.Errorf("CHANGELOG.md dates %s otherwise than the metainfo (%s)", base, c.Releases[0].Date)
	}
	if len(c.Screenshots) == 0 || !strings.HasSuffix(c.Screenshots[0], "/docs/screenshot.png") {
		t.Errorf("metainfo screenshots %q: want the README's docs/screenshot.png", c.Screenshots)
	}
}

func TestTheDesktopEntryIsTheApps(t *testing.T) {
	entry := readFile(t, "build/linux/"+AppID+".desktop")
	for _, want := range []string{"\nExec=conch\n", "\nIcon=" + AppID + "\n", "\nType=Application\n"} {
		if !strings.Contains(entry, want) {
			t.Errorf("%s.desktop has no %q", AppID, strings.TrimSpace(want))
		}
	}
}

func TestNfpmTakesTheVersionAndEveryIcon(t *testing.T) {
	cfg := readFile(t, "build/linux/nfpm.yaml")
	if !regexp.MustCompile(`(?m)^version: \$\{CONCH_VERSION\}$`).MatchString(cfg) {
		t.Error("nfpm.yaml must take its version from ${CONCH_VERSION} (scripts/version), not a number of its own")
	}
	for _, dst := range []string{"/usr/bin/conch", "/usr/share/applications/" + AppID + ".desktop", "/usr/share/metainfo/" + AppID + ".metainfo.xml"} {
		if !strings.Contains(cfg, "dst: "+dst+"\n") {
			t.Errorf("nfpm.yaml installs no %s", dst)
		}
	}
	m := regexp.MustCompile(`(?m)^icon_sizes=\(([0-9 ]+)\)$`).FindStringSubmatch(readFile(t, "scripts/dist"))
	if m == nil {
		t.Fatal("scripts/dist has no icon_sizes=(…) line")
	}
	sizes := strings.Fields(m[1])
	if len(sizes) == 0 || sizes[0] != "16" || sizes[len(sizes)-1] != "512" {
		t.Errorf("scripts/dist draws %v: want 16 to 512 px", sizes)
	}
	got := regexp.MustCompile(`dst: /usr/share/icons/hicolor/([0-9]+)x([0-9]+)/apps/`+regexp.QuoteMeta(AppID)+`\.png`).FindAllStringSubmatch(cfg, -1)
	var packed []string
	for _, g := range got {
		packed = append(packed, g[1])
	}
	if strings.Join(packed, " ") != strings.Join(sizes, " ") {
		t.Errorf("nfpm.yaml packs icons at %v, scripts/dist draws %v", packed, sizes)
	}
}
