package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md's navree reference from navree's help")

const (
	navreeStart = "<!-- navree reference: made by go test ./cmd/navree -run TestCLIReference -update; do not edit by hand -->\n"
	navreeEnd   = "<!-- end of navree reference -->\n"
)

// TestCLIReference: docs/cli.md lists navree's commands and flags as its
// own help gives them.
func TestCLIReference(t *testing.T) {
	var want strings.Builder
	for _, args := range [][]string{{"--help"}, {"new", "--help"}, {"dev", "--help"}, {"make:module", "--help"}, {"make:job", "--help"},
		{"make:listener", "--help"}, {"make:notification", "--help"}, {"make:mail", "--help"}} {
		var out, errs bytes.Buffer
		if err := run(context.Background(), args, &out, &errs); err != nil {
			t.Fatal(err)
		}
		if want.Len() > 0 {
			want.WriteString("\n")
		}
		want.WriteString("### navree " + strings.Join(args, " ") + "\n\n```\n" + out.String() + "```\n")
	}
	path := filepath.Join("..", "..", "docs", "cli.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), navreeStart)
	got, after, ok2 := strings.Cut(rest, navreeEnd)
	if !ok || !ok2 {
		t.Fatal("docs/cli.md has no navree reference markers")
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+navreeStart+want.String()+navreeEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want.String() {
		t.Fatal("docs/cli.md's navree reference is not navree's help: run go test ./cmd/navree -run TestCLIReference -update")
	}
}
