package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// makings is the repository's build/darwin, from this package's folder.
const makings = "../../../build/darwin"

func TestMakingsAreWhole(t *testing.T) {
	for _, v := range []string{"0.1.0", "0.1.0+3.1a2b3c4d", "0.2.0-dev.3+1a2b3c4d"} {
		if err := checkMakings(makings, v); err != nil {
			t.Errorf("version %s: %v", v, err)
		}
	}
}

func TestInfoPlistTakesTheVersion(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(makings, "Info.plist"))
	if err != nil {
		t.Fatal(err)
	}
	filled, err := fillPlist(tmpl, "1.2.3+4.abcdef12")
	if err != nil {
		t.Fatal(err)
	}
	info, err := parsePlist(filled)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"CFBundleShortVersionString": "1.2.3",
		"CFBundleVersion":            "1.2.3",
		"CFBundleGetInfoString":      "Conch 1.2.3+4.abcdef12",
		"CFBundleIdentifier":         "dev.conch.desktop",
		"LSMinimumSystemVersion":     "11.0",
		"NSHighResolutionCapable":    true,
	} {
		if info[k] != want {
			t.Errorf("%s = %#v, want %#v", k, info[k], want)
		}
	}
	ats, _ := info["NSAppTransportSecurity"].(map[string]any)
	if ats["NSAllowsLocalNetworking"] != true {
		t.Errorf("NSAppTransportSecurity = %#v, want NSAllowsLocalNetworking true", info["NSAppTransportSecurity"])
	}
	if bytes.Contains(filled, []byte("{{")) {
		t.Errorf("the filled Info.plist still holds a placeholder:\n%s", filled)
	}
	for _, bad := range []string{"", "dev", "1.2", "1.2.3<x>", "1.2.3 & 4"} {
		if _, err := fillPlist(tmpl, bad); err == nil {
			t.Errorf("fillPlist took version %q", bad)
		}
	}
}

func TestEntitlements(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(makings, "entitlements.plist"))
	if err != nil {
		t.Fatal(err)
	}
	ent, err := parsePlist(data)
	if err != nil {
		t.Fatal(err)
	}
	if ent["com.apple.security.network.client"] != true {
		t.Errorf("entitlements lack network.client: %#v", ent)
	}
	for k, v := range ent {
		if v != true {
			t.Errorf("entitlement %s is %#v: Apple's rule is to leave out what is not true", k, v)
		}
	}
	if _, ok := ent["com.apple.security.app-sandbox"]; ok {
		t.Error("Conch cannot run sandboxed: it runs the person's commands in their folders")
	}
}

func TestParsePlistRefusesBrokenOnes(t *testing.T) {
	for name, doc := range map[string]string{
		"no dict":        `<plist version="1.0"><array/></plist>`,
		"key, no value":  `<plist><dict><key>a</key></dict></plist>`,
		"value, no key":  `<plist><dict><string>a</string></dict></plist>`,
		"unknown":        `<plist><dict><key>a</key><thing/></dict></plist>`,
		"not closed":     `<plist><dict><key>a</key><string>b</string>`,
		"bad integer":    `<plist><dict><key>a</key><integer>x</integer></dict></plist>`,
		"mismatched tag": `<plist><dict><key>a</key><string>b</true></dict></plist>`,
	} {
		if _, err := parsePlist([]byte(doc)); err == nil {
			t.Errorf("%s: parsePlist took %s", name, doc)
		}
	}
}

func TestIcnsSizes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(makings, "conch.icns"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := icnsPixelSizes(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, px := range iconSizes {
		if !have[px] {
			t.Errorf("conch.icns has no %d px icon: %v", px, have)
		}
	}
	// An element whose length runs past the end, and a header that lies.
	cut := append([]byte(nil), data[:64]...)
	binary.BigEndian.PutUint32(cut[4:8], 64)
	if _, err := icnsPixelSizes(cut); err == nil || !strings.Contains(err.Error(), "bad length") {
		t.Errorf("a cut icns: %v", err)
	}
	if _, err := icnsPixelSizes(data[:len(data)-1]); err == nil {
		t.Error("an icns shorter than its header says was taken")
	}
	if _, err := icnsPixelSizes([]byte("not an icon")); err == nil {
		t.Error("a file that is no icns was taken")
	}
}

func TestAssembleLaysOutTheBundle(t *testing.T) {
	bin, err := os.Executable() // any real program stands for conch here
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "Conch.app")
	if err := os.MkdirAll(filepath.Join(out, "stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, "0.3.0", out, makings, "", false); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Stat(filepath.Join(out, "Contents", "MacOS", "conch"))
	if err != nil || exe.Mode().Perm()&0o111 == 0 {
		t.Fatalf("Contents/MacOS/conch: %v, %v", exe, err)
	}
	for _, f := range []string{"Info.plist", "PkgInfo", "Resources/conch.icns"} {
		if _, err := os.Stat(filepath.Join(out, "Contents", f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "stale")); !os.IsNotExist(err) {
		t.Errorf("the old bundle's files stayed: %v", err)
	}
	plist, err := os.ReadFile(filepath.Join(out, "Contents", "Info.plist"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := parsePlist(plist)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInfo(info, "0.3.0"); err != nil {
		t.Error(err)
	}
	if err := run("", "0.3.0", out, makings, "", false); err == nil {
		t.Error("run without -bin made a bundle")
	}
}

// -remote puts the runner's builds for hosts in the bundle, where Conch
// looks beside its binary, each checked against its checksum; a build that
// does not match it makes no bundle.
func TestTheBundleCarriesTheRunner(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	remote := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		b := []byte("a static conch for " + arch)
		sum := sha256.Sum256(b)
		name := filepath.Join(remote, "conch-linux-"+arch)
		if err := os.WriteFile(name, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name+".sha256", []byte(hex.EncodeToString(sum[:])+"  conch-linux-"+arch+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "Conch.app")
	if err := run(bin, "0.3.0", out, makings, remote, false); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		got, err := os.ReadFile(filepath.Join(out, "Contents", "Resources", "remote", "conch-linux-"+arch))
		if err != nil || string(got) != "a static conch for "+arch {
			t.Fatalf("the bundle's runner for %s: %q %v", arch, got, err)
		}
		if _, err := os.Stat(filepath.Join(out, "Contents", "Resources", "remote", "conch-linux-"+arch+".sha256")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(remote, "conch-linux-arm64"), []byte("something else"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(bin, "0.3.0", out, makings, remote, false); err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Fatalf("a build that does not match its checksum: %v", err)
	}
}
