// Command macapp lays out Conch.app from a macOS build of conch and the
// makings in build/darwin (Info.plist, a template for the version;
// conch.icns; entitlements.plist, which codesign takes), and checks the
// makings. The release workflow runs it on a macOS runner:
//
//	go run ./backend/devcmd/macapp -bin build/bin/conch -version "$(scripts/version)" -remote build/remote/"$(scripts/version)" -out build/dist/Conch.app
//
// -remote puts the runner Conch copies to hosts (make remote's static Linux
// builds, each checked against its .sha256) in Contents/Resources/remote,
// where Conch looks for them beside its binary.
//
// With -check it only checks the makings (no binary needed): the filled
// Info.plist parses and names what macOS needs, the entitlements parse,
// and the icon holds every size from 16 to 1024 px.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	bin := flag.String("bin", "", "the macOS conch binary to bundle")
	version := flag.String("version", "", "the version, as scripts/version prints it")
	out := flag.String("out", "build/dist/Conch.app", "where the bundle goes")
	makings := flag.String("makings", "build/darwin", "the folder with Info.plist, conch.icns and entitlements.plist")
	check := flag.Bool("check", false, "only check the makings")
	remote := flag.String("remote", "", "the runner's builds for hosts (make remote's build/remote/<version>), put in Contents/Resources/remote")
	flag.Parse()
	if err := run(*bin, *version, *out, *makings, *remote, *check); err != nil {
		fmt.Fprintln(os.Stderr, "macapp:", err)
		os.Exit(1)
	}
}

func run(bin, version, out, makings, remote string, check bool) error {
	if version == "" {
		return errors.New("-version is needed")
	}
	if err := checkMakings(makings, version); err != nil {
		return err
	}
	if check {
		fmt.Println("macapp: the makings in", makings, "are whole")
		return nil
	}
	if bin == "" {
		return errors.New("-bin is needed (or -check)")
	}
	if err := assemble(out, bin, version, makings); err != nil {
		return err
	}
	if remote != "" {
		if err := addRunner(out, remote); err != nil {
			return err
		}
	}
	fmt.Println("macapp: wrote", out)
	return nil
}

// iconSizes are the sizes Conch's .icns must hold, Finder's and the
// Dock's at 1x and 2x.
var iconSizes = []int{16, 32, 128, 256, 512, 1024}

// checkMakings checks build/darwin: Info.plist filled with version,
// entitlements.plist and conch.icns.
func checkMakings(makings, version string) error {
	tmpl, err := os.ReadFile(filepath.Join(makings, "Info.plist"))
	if err != nil {
		return err
	}
	filled, err := fillPlist(tmpl, version)
	if err != nil {
		return err
	}
	info, err := parsePlist(filled)
	if err != nil {
		return fmt.Errorf("Info.plist: %w", err)
	}
	if err := checkInfo(info, version); err != nil {
		return err
	}
	ent, err := os.ReadFile(filepath.Join(makings, "entitlements.plist"))
	if err != nil {
		return err
	}
	if _, err := parsePlist(ent); err != nil {
		return fmt.Errorf("entitlements.plist: %w", err)
	}
	icns, err := os.ReadFile(filepath.Join(makings, "conch.icns"))
	if err != nil {
		return err
	}
	have, err := icnsPixelSizes(icns)
	if err != nil {
		return fmt.Errorf("conch.icns: %w", err)
	}
	for _, px := range iconSizes {
		if !have[px] {
			var got []int
			for s := range have {
				got = append(got, s)
			}
			sort.Ints(got)
			return fmt.Errorf("conch.icns has no %d px icon (it has %v): run scripts/icon", px, got)
		}
	}
	return nil
}
