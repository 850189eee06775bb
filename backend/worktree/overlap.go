package worktree

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"conch/backend/task"
)

// Files lists the files the helper changed in its worktree: committed on
// its branch since Base, and not committed yet (modified, staged, deleted,
// untracked; ignored files are no work). Paths are slash paths from the
// repository's top, sorted, each once; a rename names both sides. A
// worktree deleted by hand still has its branch's commits.
func (t Tree) Files(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	add := func(out string) {
		for _, f := range strings.Split(out, "\x00") {
			if f != "" {
				seen[f] = true
			}
		}
	}
	present := t.present() == nil
	dir := t.Path
	if !present {
		repo, err := t.repo(ctx)
		if err != nil {
			return nil, fmt.Errorf("list changed files: %w", err)
		}
		dir = repo
	}
	if t.Base != "" {
		ref := "refs/heads/" + t.Branch
		out, err := git(ctx, dir, "for-each-ref", "--format=%(objectname)", ref)
		if err != nil {
			return nil, fmt.Errorf("list changed files of %s: %w", t.Branch, err)
		}
		if sha := strings.TrimSpace(out); sha != "" && sha != t.Base {
			out, err := git(ctx, dir, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", t.Base, sha, "--")
			if err != nil {
				return nil, fmt.Errorf("list changed files of %s: %w", t.Branch, err)
			}
			add(out)
		}
	}
	if present {
		out, err := git(ctx, t.Path, "status", "--porcelain", "-z", "--no-renames", "--untracked-files=all")
		if err != nil {
			return nil, fmt.Errorf("list changed files in %s: %w", t.Path, err)
		}
		for _, e := range strings.Split(out, "\x00") {
			// "XY path"; without renames each entry is one path.
			if len(e) > 3 {
				seen[e[3:]] = true
			}
		}
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// Overlaps finds the files that more than one of a group's helpers changed
// in their kept worktrees (see Files), and returns by task id what each
// shares and with whom (the others in the order given), files sorted.
// Helpers without a kept worktree, or whose worktree cannot be read, are
// left out; one with no overlap has no entry.
func Overlaps(ctx context.Context, helpers []task.Task) map[string][]task.Overlap {
	byFile := map[string][]string{} // file -> task ids, in helpers' order
	for _, h := range helpers {
		if h.Worktree == nil || !h.Worktree.Kept {
			continue
		}
		files, err := FromRecord(*h.Worktree).Files(ctx)
		if err != nil {
			continue
		}
		for _, f := range files {
			byFile[f] = append(byFile[f], h.ID)
		}
	}
	out := map[string][]task.Overlap{}
	for f, ids := range byFile {
		if len(ids) < 2 {
			continue
		}
		for _, id := range ids {
			var with []string
			for _, other := range ids {
				if other != id {
					with = append(with, other)
				}
			}
			out[id] = append(out[id], task.Overlap{File: f, With: with})
		}
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].File < list[j].File })
	}
	return out
}

// maxFiles is how many files a sentence about an overlap names.
const maxFiles = 5

// SayOverlaps says, for a group's merged result, which helpers changed the
// same files, from their records' Worktree.Overlap: "Both 'Fix the bug'
// and 'Write the tests' changed src/app.ts." One sentence for each set of
// helpers, in the order given; "" when none overlap.
func SayOverlaps(helpers []task.Task) string {
	title := map[string]string{}
	order := map[string]int{}
	for i, h := range helpers {
		title[h.ID], order[h.ID] = h.Title, i
	}
	type set struct {
		ids   []string
		files []string
	}
	var sets []*set
	byKey := map[string]*set{}
	seen := map[string]bool{} // file and set, said once
	for _, h := range helpers {
		if h.Worktree == nil {
			continue
		}
		for _, o := range h.Worktree.Overlap {
			ids := append([]string{h.ID}, o.With...)
			sort.SliceStable(ids, func(i, j int) bool { return rank(order, ids[i]) < rank(order, ids[j]) })
			key := strings.Join(ids, "\x00")
			if seen[key+"\x00\x00"+o.File] {
				continue
			}
			seen[key+"\x00\x00"+o.File] = true
			s := byKey[key]
			if s == nil {
				s = &set{ids: ids}
				byKey[key] = s
				sets = append(sets, s)
			}
			s.files = append(s.files, o.File)
		}
	}
	var said []string
	for _, s := range sets {
		names := make([]string, len(s.ids))
		for i, id := range s.ids {
			names[i] = "'" + firstOf(title[id], "another helper") + "'"
		}
		sort.Strings(s.files)
		said = append(said, sentence(names, s.files))
	}
	return strings.Join(said, " ")
}

// sentence says that the named helpers changed files: "Both 'A' and 'B'
// changed x.", "'A', 'B' and 'C' all changed x and y.", naming at most a
// few files and counting the rest.
func sentence(names, files []string) string {
	who := ""
	switch len(names) {
	case 0, 1:
		who = strings.Join(names, "")
	case 2:
		who = "Both " + names[0] + " and " + names[1]
	default:
		who = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " all"
	}
	what := files
	more := 0
	if len(files) > maxFiles {
		what, more = files[:maxFiles-1], len(files)-(maxFiles-1)
	}
	list := ""
	switch {
	case more > 0:
		list = strings.Join(what, ", ") + fmt.Sprintf(" and %d more files", more)
	case len(what) == 1:
		list = what[0]
	default:
		list = strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
	}
	return who + " changed " + list + "."
}

func rank(order map[string]int, id string) int {
	if i, ok := order[id]; ok {
		return i
	}
	return len(order)
}

func firstOf(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}
