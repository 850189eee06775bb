package tool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Bounds on what a file tool reads or returns, so one call never floods the
// model's context or Conch's memory.
const (
	maxRead        = 256 << 10
	maxListEntries = 2000
	maxMatches     = 200
	maxSearchFile  = 1 << 20
	maxMatchLine   = 300
)

// skipDirs are never listed or searched into.
var skipDirs = map[string]bool{".git": true, "node_modules": true}

var listFiles = Tool{
	Name:        "list_files",
	Description: "List the files and folders in a folder of the chat's folder (folders end with /). recursive lists everything below it, skipping .git and node_modules.",
	Schema: schema(nil, `"path":{"type":"string","description":"folder, relative to the chat's folder; default ."},`+
		`"recursive":{"type":"boolean"}`),
	Effect: None,
	Title:  titleOf("List", "path"),
	Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			Path      string `json:"path"`
			Recursive bool   `json:"recursive"`
		}
		if err := decode("list_files", args, &a); err != nil {
			return "", err
		}
		dir, err := Resolve(env.Dir, a.Path)
		if err != nil {
			return "", err
		}
		var out []string
		more := false
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir {
					return err
				}
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if p == dir {
				if !d.IsDir() {
					return fmt.Errorf("%s is a file, not a folder", a.Path)
				}
				return nil
			}
			if len(out) == maxListEntries {
				more = true
				return filepath.SkipAll
			}
			rel := relTo(dir, p)
			if d.IsDir() {
				out = append(out, rel+"/")
				if !a.Recursive || skipDirs[d.Name()] {
					return filepath.SkipDir
				}
				return nil
			}
			out = append(out, rel)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("list %s: %w", shown(a.Path), err)
		}
		if len(out) == 0 {
			return "(empty folder)", nil
		}
		s := strings.Join(out, "\n")
		if more {
			s += fmt.Sprintf("\n… (stopped at %d entries; list a subfolder)", maxListEntries)
		}
		return s, nil
	},
}

var readFile = Tool{
	Name:        "read_file",
	Description: "Read a text file in the chat's folder. offset (first line, from 1) and limit (number of lines) read part of a long file.",
	Schema: schema([]string{"path"}, `"path":{"type":"string"},`+
		`"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}`),
	Effect: None,
	Title:  titleOf("Read", "path"),
	Run: func(_ context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}
		if err := decode("read_file", args, &a, "path"); err != nil {
			return "", err
		}
		if a.Offset < 0 || a.Limit < 0 {
			return "", errors.New("read_file: offset and limit must be 1 or more")
		}
		p, err := Resolve(env.Dir, a.Path)
		if err != nil {
			return "", err
		}
		b, truncated, err := readBounded(p)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", a.Path, err)
		}
		if isBinary(b) {
			return "", fmt.Errorf("%s is a binary file; read_file reads text", a.Path)
		}
		s := string(b)
		if a.Offset > 0 || a.Limit > 0 {
			lines := strings.SplitAfter(s, "\n")
			start := max(a.Offset, 1) - 1
			if start >= len(lines) {
				return "", fmt.Errorf("%s has %d lines; offset %d is past its end", a.Path, len(lines), a.Offset)
			}
			end := len(lines)
			if a.Limit > 0 && start+a.Limit < end {
				end = start + a.Limit
			}
			s = strings.Join(lines[start:end], "")
		}
		if truncated {
			s += fmt.Sprintf("\n… (only the first %d KiB were read; use offset and limit)", maxRead>>10)
		}
		return s, nil
	},
}

// readBounded reads at most maxRead bytes of a regular file.
func readBounded(p string) ([]byte, bool, error) {
	if fi, err := os.Stat(p); err != nil {
		return nil, false, err
	} else if fi.IsDir() {
		return nil, false, errors.New("it is a folder; use list_files")
	} else if !fi.Mode().IsRegular() {
		return nil, false, errors.New("it is not a regular file (a pipe or device would never end)")
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if fi.IsDir() {
		return nil, false, errors.New("it is a folder; use list_files")
	}
	buf := make([]byte, min(fi.Size(), maxRead))
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return buf[:n], fi.Size() > maxRead, nil
}

func isBinary(b []byte) bool { return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 }

var searchFiles = Tool{
	Name:        "search_files",
	Description: "Search the text files under a folder of the chat's folder for a regular expression (Go syntax); glob limits which file names are searched (e.g. *.go). Answers path:line: text.",
	Schema: schema([]string{"pattern"}, `"pattern":{"type":"string"},"path":{"type":"string"},`+
		`"glob":{"type":"string"}`),
	Effect: None,
	Title:  titleOf("Searched for", "pattern"),
	Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
			Glob    string `json:"glob"`
		}
		if err := decode("search_files", args, &a, "pattern"); err != nil {
			return "", err
		}
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return "", fmt.Errorf("search_files: pattern is not a valid regular expression: %v", err)
		}
		if a.Glob != "" {
			if _, err := filepath.Match(a.Glob, "x"); err != nil {
				return "", fmt.Errorf("search_files: glob %q is not valid: %v", a.Glob, err)
			}
		}
		dir, err := Resolve(env.Dir, a.Path)
		if err != nil {
			return "", err
		}
		root, _ := Resolve(env.Dir, "")
		var out []string
		more := false
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() {
				if p != dir && skipDirs[d.Name()] {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if a.Glob != "" {
				if ok, _ := filepath.Match(a.Glob, d.Name()); !ok {
					return nil
				}
			}
			if fi, err := d.Info(); err != nil || fi.Size() > maxSearchFile {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || isBinary(b) {
				return nil
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, maxSearchFile)
			for n := 1; sc.Scan(); n++ {
				if !re.Match(sc.Bytes()) {
					continue
				}
				if len(out) == maxMatches {
					more = true
					return filepath.SkipAll
				}
				line := sc.Text()
				if len(line) > maxMatchLine {
					line = line[:maxMatchLine] + "…"
				}
				out = append(out, fmt.Sprintf("%s:%d: %s", relTo(root, p), n, line))
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("search %s: %w", shown(a.Path), err)
		}
		if len(out) == 0 {
			return "No matches.", nil
		}
		s := strings.Join(out, "\n")
		if more {
			s += fmt.Sprintf("\n… (stopped at %d matches; narrow the search)", maxMatches)
		}
		return s, nil
	},
}

var writeFile = Tool{
	Name:        "write_file",
	Description: "Write a file in the chat's folder, creating it (and its folders) or replacing what it holds.",
	Schema:      schema([]string{"path", "content"}, `"path":{"type":"string"},"content":{"type":"string"}`),
	Effect:      Edit,
	Title:       titleOf("Write", "path"),
	Run: func(_ context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			Path    *string `json:"path"`
			Content *string `json:"content"`
		}
		if err := decode("write_file", args, &a, "path"); err != nil {
			return "", err
		}
		if a.Content == nil {
			return "", errors.New(`write_file: "content" is required (it may be "")`)
		}
		p, err := Resolve(env.Dir, *a.Path)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("write %s: %w", *a.Path, err)
		}
		perm := fs.FileMode(0o644)
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return "", fmt.Errorf("write %s: it is a folder", *a.Path)
			}
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("write %s: it is not a regular file", *a.Path)
			}
			perm = fi.Mode().Perm()
		}
		if err := os.WriteFile(p, []byte(*a.Content), perm); err != nil {
			return "", fmt.Errorf("write %s: %w", *a.Path, err)
		}
		return fmt.Sprintf("Wrote %d bytes to %s.", len(*a.Content), *a.Path), nil
	},
}

var editFile = Tool{
	Name:        "edit_file",
	Description: "Replace one exact piece of text in a file of the chat's folder. old must appear exactly once; include enough surrounding lines to make it unique.",
	Schema:      schema([]string{"path", "old", "new"}, `"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}`),
	Effect:      Edit,
	Title:       titleOf("Edit", "path"),
	Run: func(_ context.Context, env Env, args json.RawMessage) (string, error) {
		var a struct {
			Path string  `json:"path"`
			Old  string  `json:"old"`
			New  *string `json:"new"`
		}
		if err := decode("edit_file", args, &a, "path", "old"); err != nil {
			return "", err
		}
		if a.New == nil {
			return "", errors.New(`edit_file: "new" is required (it may be "")`)
		}
		p, err := Resolve(env.Dir, a.Path)
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("edit %s: %w", a.Path, err)
		}
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("edit %s: it is not a regular file", a.Path)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("edit %s: %w", a.Path, err)
		}
		switch n := strings.Count(string(b), a.Old); n {
		case 1:
		case 0:
			return "", fmt.Errorf("edit %s: the old text was not found; read the file and copy it exactly", a.Path)
		default:
			return "", fmt.Errorf("edit %s: the old text appears %d times; include more of the lines around it", a.Path, n)
		}
		s := strings.Replace(string(b), a.Old, *a.New, 1)
		if err := os.WriteFile(p, []byte(s), fi.Mode().Perm()); err != nil {
			return "", fmt.Errorf("edit %s: %w", a.Path, err)
		}
		return fmt.Sprintf("Edited %s.", a.Path), nil
	},
}

func shown(p string) string {
	if p == "" {
		return "."
	}
	return p
}
