package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md's command reference from the app's help")

// cliReference is the command reference docs/cli.md holds between its
// markers: each command's own help, in the order --help lists them.
func cliReference(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	top := run(t, dir, "", "--help")
	var b strings.Builder
	b.WriteString("### app --help\n\n```\n" + top + "```\n")
	for _, m := range regexp.MustCompile(`(?m)^\s+([a-z]+(?::[a-z]+)?)  `).FindAllStringSubmatch(top, -1) {
		name := m[1]
		if name == "help" {
			continue
		}
		b.WriteString("\n### " + name + "\n\n```\n" + run(t, dir, "", name, "--help") + "```\n")
	}
	return b.String()
}

const (
	referenceStart = "<!-- reference: made by go test ./cmd/app -run TestCLIReference -update; do not edit by hand -->\n"
	referenceEnd   = "<!-- end of reference -->\n"
)

// TestCLIReference: docs/cli.md lists every command and flag of the
// example app as its own help gives them, so the page cannot drift from
// the code. -short leaves it out (the full run and CI check it).
func TestCLIReference(t *testing.T) {
	if testing.Short() && !*update {
		t.Skip("-short: the reference runs every command's --help as a process of its own; the full run checks it")
	}
	t.Parallel()
	path := filepath.Join("..", "..", "docs", "cli.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), referenceStart)
	_, after, ok2 := strings.Cut(rest, referenceEnd)
	if !ok || !ok2 {
		t.Fatalf("docs/cli.md has no reference markers")
	}
	want := cliReference(t)
	if *update {
		if err := os.WriteFile(path, []byte(before+referenceStart+want+referenceEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, _, _ := strings.Cut(rest, referenceEnd); got != want {
		t.Fatalf("docs/cli.md's reference is not the app's help: run go test ./cmd/app -run TestCLIReference -update")
	}
}
