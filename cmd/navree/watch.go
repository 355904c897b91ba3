package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// stamp is what a file's change changes: its size and modification time.
type stamp struct {
	size  int64
	mtime time.Time
}

// snapshot is the stamps of the files of an app that its binary is built
// from or reads as it starts, by path relative to the app's folder.
type snapshot map[string]stamp

// watchedExt are the endings of the files navree dev watches: Go code,
// templates, configuration, migrations and the static files an app
// embeds. A test file (_test.go) is not built into the app.
var watchedExt = []string{".go", ".tmpl", ".html", ".toml", ".sql", ".css", ".js", ".svg"}

// skippedDir reports whether navree dev leaves out the folder name: one
// hidden (.git, an editor's), the app's var (its database and the files
// jobs write), the vendored or fetched dependencies, and test data.
func skippedDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "var" || name == "vendor" || name == "node_modules" || name == "testdata"
}

// watched reports whether navree dev watches the file name: go.mod,
// go.sum, .env and .env.*, and the endings of watchedExt, but not tests
// nor an editor's backup, swap or lock files (x.go~, .x.go.swp, .#x.go),
// whose endings differ or which are hidden.
func watched(name string) bool {
	switch {
	case name == "go.mod" || name == "go.sum" || name == ".env" || strings.HasPrefix(name, ".env."):
		return true
	case strings.HasPrefix(name, "."), strings.HasSuffix(name, "_test.go"):
		return false
	}
	return slices.Contains(watchedExt, filepath.Ext(name))
}

// scan reads the snapshot of the app in root. A file that goes while it
// is read is left out, as if it had gone just before.
func scan(root string) (snapshot, error) {
	s := snapshot{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if path != root && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !watched(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if os.IsNotExist(err) {
			return nil
		} else if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		s[filepath.ToSlash(rel)] = stamp{info.Size(), info.ModTime()}
		return nil
	})
	return s, err
}

// changes lists, sorted, the paths that differ between before and s: a
// file written, made or removed.
func (s snapshot) changes(before snapshot) []string {
	var paths []string
	for path, st := range s {
		if old, ok := before[path]; !ok || old != st {
			paths = append(paths, path)
		}
	}
	for path := range before {
		if _, ok := s[path]; !ok {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	return paths
}

// changed says which files changed, for navree dev's line: one path, two
// of them, or the first and how many more.
func changed(paths []string) string {
	switch len(paths) {
	case 1:
		return paths[0] + " changed"
	case 2:
		return paths[0] + " and " + paths[1] + " changed"
	}
	return paths[0] + " and " + strconv.Itoa(len(paths)-1) + " other files changed"
}
