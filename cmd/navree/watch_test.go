package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDevWatchesTheFilesTheAppIsBuiltFrom: navree dev's snapshot holds
// the app's code, templates, configuration, migrations and static files,
// and leaves out tests, editors' files, hidden folders, var, vendor,
// node_modules and testdata; a write, a new file and a removal are
// changes, and a file touched to the same stamp is not.
func TestDevWatchesTheFilesTheAppIsBuiltFrom(t *testing.T) {
	dir := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		path = filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	watchedFiles := []string{
		".env", ".env.local", "config/app.toml", "contacts/export.go",
		"contacts/mail/welcome.html.tmpl", "contacts/mail/welcome.txt.tmpl",
		"contacts/migrations/0001_create_contacts.up.sql", "go.mod", "go.sum", "main.go",
		"web/static/app.css", "web/static/app.js", "web/static/logo.svg", "web/templates/index.html",
	}
	for _, path := range watchedFiles {
		write(path, "x")
	}
	for _, path := range []string{
		"contacts/export_test.go", "contacts/export.go~", "contacts/.export.go.swp", "contacts/.#export.go", "contacts/4913",
		".git/HEAD", ".git/refs/x.go", ".idea/workspace.xml", "_build/x.go", "var/app.db", "var/exports/1.csv", "var/x.go",
		"vendor/example.com/x/x.go", "node_modules/x/x.js", "contacts/testdata/golden.sql", "README.md", "bin/crm",
	} {
		write(path, "x")
	}
	before, err := scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for path := range before {
		got = append(got, path)
	}
	slices.Sort(got)
	if !slices.Equal(got, watchedFiles) {
		t.Fatalf("navree dev watches\n%q, want\n%q", got, watchedFiles)
	}
	if ch := before.changes(before); len(ch) != 0 {
		t.Errorf("a snapshot compared with itself changes %q", ch)
	}

	write("main.go", "xy")                                          // a write that changes the size
	write("contacts/new.go", "x")                                   // a new file
	if err := os.Remove(filepath.Join(dir, "go.sum")); err != nil { // a removal
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute) // a write of the same size: its time differs
	if err := os.Chtimes(filepath.Join(dir, "config/app.toml"), later, later); err != nil {
		t.Fatal(err)
	}
	write("contacts/export_test.go", "changed") // not watched
	after, err := scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config/app.toml", "contacts/new.go", "go.sum", "main.go"}
	if ch := after.changes(before); !slices.Equal(ch, want) {
		t.Errorf("changes = %q, want %q", ch, want)
	}
	for _, tt := range []struct {
		paths []string
		want  string
	}{
		{want[:1], "config/app.toml changed"},
		{want[:2], "config/app.toml and contacts/new.go changed"},
		{want, "config/app.toml and 3 other files changed"},
	} {
		if got := changed(tt.paths); got != tt.want {
			t.Errorf("changed(%q) = %q, want %q", tt.paths, got, tt.want)
		}
	}
}
