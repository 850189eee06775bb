package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// BundleID is Conch's bundle identifier, the same id the Linux desktop
// entry and the Windows toasts use.
const BundleID = "dev.conch.desktop"

// baseVersion is the X.Y.Z a version starts with: the only part macOS
// compares (CFBundleShortVersionString, CFBundleVersion).
var baseVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`)

// safeVersion is what a version may hold: scripts/version's digits, dots,
// letters, - and +, nothing XML would need escaped.
var safeVersion = regexp.MustCompile(`^[0-9A-Za-z.+-]+$`)

// fillPlist puts version into the Info.plist template.
func fillPlist(tmpl []byte, version string) ([]byte, error) {
	base := baseVersion.FindString(version)
	if base == "" || !safeVersion.MatchString(version) {
		return nil, fmt.Errorf("version %q is not X.Y.Z, optionally followed by -pre or +build", version)
	}
	t, err := template.New("Info.plist").Option("missingkey=error").Parse(string(tmpl))
	if err != nil {
		return nil, fmt.Errorf("read the Info.plist template: %w", err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, struct{ Version, Base string }{version, base}); err != nil {
		return nil, fmt.Errorf("fill the Info.plist template: %w", err)
	}
	return out.Bytes(), nil
}

// parsePlist decodes an XML property list whose top is a dictionary: its
// strings, integers, booleans, nested dictionaries and arrays.
func parsePlist(data []byte) (map[string]any, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("plist: no <dict> under <plist>: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			v, err := plistValue(d, se)
			if err != nil {
				return nil, err
			}
			return v.(map[string]any), nil
		}
	}
}

// plistValue reads the value that start opens, through its end.
func plistValue(d *xml.Decoder, start xml.StartElement) (any, error) {
	switch start.Name.Local {
	case "true", "false":
		return start.Name.Local == "true", d.Skip()
	case "string", "integer", "real", "date", "data":
		var s string
		if err := d.DecodeElement(&s, &start); err != nil {
			return nil, fmt.Errorf("plist <%s>: %w", start.Name.Local, err)
		}
		if start.Name.Local == "integer" {
			return strconv.ParseInt(s, 10, 64)
		}
		return s, nil
	case "dict", "array":
		return plistContainer(d, start.Name.Local)
	}
	return nil, fmt.Errorf("plist: unknown element <%s>", start.Name.Local)
}

// plistContainer reads a <dict> (keys and values in turn) or an <array>.
func plistContainer(d *xml.Decoder, kind string) (any, error) {
	dict := map[string]any{}
	var list []any
	key := ""
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("plist <%s>: %w", kind, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if key != "" {
				return nil, fmt.Errorf("plist: key %q has no value", key)
			}
			if kind == "array" {
				return list, nil
			}
			return dict, nil
		case xml.StartElement:
			if kind == "dict" && t.Name.Local == "key" && key == "" {
				if err := d.DecodeElement(&key, &t); err != nil {
					return nil, fmt.Errorf("plist <key>: %w", err)
				}
				if key == "" {
					return nil, errors.New("plist: an empty <key>")
				}
				continue
			}
			if kind == "dict" && key == "" {
				return nil, fmt.Errorf("plist: <%s> where a <key> belongs", t.Name.Local)
			}
			v, err := plistValue(d, t)
			if err != nil {
				return nil, err
			}
			if kind == "array" {
				list = append(list, v)
			} else {
				dict[key] = v
				key = ""
			}
		}
	}
}

// checkInfo says what a filled Info.plist lacks that macOS or Conch needs.
func checkInfo(info map[string]any, version string) error {
	want := map[string]any{
		"CFBundleIdentifier":         BundleID,
		"CFBundleExecutable":         "conch",
		"CFBundleIconFile":           "conch",
		"CFBundlePackageType":        "APPL",
		"CFBundleShortVersionString": baseVersion.FindString(version),
		"CFBundleVersion":            baseVersion.FindString(version),
		"CFBundleGetInfoString":      "Conch " + version,
		"LSMinimumSystemVersion":     "11.0",
		"NSHighResolutionCapable":    true,
	}
	for k, v := range want {
		if info[k] != v {
			return fmt.Errorf("Info.plist: %s is %#v, want %#v", k, info[k], v)
		}
	}
	return nil
}

// icnsSizes are the pixel sizes of the icon element types an .icns holds
// (Apple's OSType codes; masks and other elements are left out).
var icnsSizes = map[string]int{
	"is32": 16, "icp4": 16, "ic04": 16,
	"il32": 32, "icp5": 32, "ic05": 32, "ic11": 32,
	"ih32": 48,
	"icp6": 64, "ic12": 64,
	"it32": 128, "ic07": 128,
	"ic08": 256, "ic13": 256,
	"ic09": 512, "ic14": 512,
	"ic10": 1024,
}

// icnsPixelSizes reads an .icns (the 'icns' header, then elements of a
// type and a length each) and returns the icon sizes it holds.
func icnsPixelSizes(data []byte) (map[int]bool, error) {
	if len(data) < 8 || string(data[:4]) != "icns" {
		return nil, errors.New("icns: no 'icns' header")
	}
	if n := binary.BigEndian.Uint32(data[4:8]); int(n) != len(data) {
		return nil, fmt.Errorf("icns: header says %d bytes, file has %d", n, len(data))
	}
	sizes := map[int]bool{}
	for off := 8; off < len(data); {
		if off+8 > len(data) {
			return nil, fmt.Errorf("icns: element header cut off at byte %d", off)
		}
		typ, n := string(data[off:off+4]), int(binary.BigEndian.Uint32(data[off+4:off+8]))
		if n < 8 || off+n > len(data) {
			return nil, fmt.Errorf("icns: element %q at byte %d has a bad length %d", typ, off, n)
		}
		if px, ok := icnsSizes[typ]; ok {
			sizes[px] = true
		}
		off += n
	}
	return sizes, nil
}

// assemble lays out the bundle at out (Conch.app): Contents/Info.plist
// filled with version, Contents/MacOS/conch (bin), the icon in
// Contents/Resources and PkgInfo. It replaces a bundle already there.
func assemble(out, bin, version, makings string) error {
	tmpl, err := os.ReadFile(filepath.Join(makings, "Info.plist"))
	if err != nil {
		return err
	}
	plist, err := fillPlist(tmpl, version)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	contents := filepath.Join(out, "Contents")
	for _, dir := range []string{"MacOS", "Resources"} {
		if err := os.MkdirAll(filepath.Join(contents, dir), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(contents, "Info.plist"), plist, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(contents, "PkgInfo"), []byte("APPL????"), 0o644); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(contents, "MacOS", "conch"), bin, 0o755); err != nil {
		return err
	}
	return copyFile(filepath.Join(contents, "Resources", "conch.icns"), filepath.Join(makings, "conch.icns"), 0o644)
}

func copyFile(dst, src string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

// addRunner copies the runner's builds for hosts (conch-linux-amd64 and
// -arm64, each with its .sha256) from dir into the bundle's
// Contents/Resources/remote, checking each against its checksum.
func addRunner(out, dir string) error {
	dst := filepath.Join(out, "Contents", "Resources", "remote")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, arch := range []string{"amd64", "arm64"} {
		name := "conch-linux-" + arch
		sumLine, err := os.ReadFile(filepath.Join(dir, name+".sha256"))
		if err != nil {
			return fmt.Errorf("the runner's build for %s: %w (run make remote)", arch, err)
		}
		f := strings.Fields(string(sumLine))
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("the runner's build for %s: %w (run make remote)", arch, err)
		}
		got := sha256.Sum256(b)
		if len(f) == 0 || f[0] != hex.EncodeToString(got[:]) {
			return fmt.Errorf("%s does not match its checksum in %s.sha256", name, name)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name+".sha256"), sumLine, 0o644); err != nil {
			return err
		}
	}
	return nil
}
