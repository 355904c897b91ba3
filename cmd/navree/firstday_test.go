package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheDocsFirstCommandsWork runs what a newcomer runs, as the docs
// write it: the README's install command (see install), then
// getting-started's "A new app in five minutes" offline (GOPROXY=off):
// its navree new, in a folder standing for the clone, and each command
// of its transcripts ($ go run . migrate, navree make:job…), whose output
// must be the page's, ids, times and durations apart, and the app's
// folder the page's /home/ada/crm. The new app then vets too.
func TestTheDocsFirstCommandsWork(t *testing.T) {
	in := installed(t)
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(page), "\n## A new app in five minutes\n")
	section, _, _ = strings.Cut(section, "\n## ")

	// Step 1: its first block, after the clone it stands for.
	_, step1, _ := strings.Cut(section, "**1. ")
	readme, err := readmeInstall()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "navree") // beside it, navree new ../crm writes the app
	if err := os.Mkdir(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(filepath.Dir(clone), "crm")
	ran := 0
	for _, line := range codeBlock(step1) {
		switch {
		case strings.HasPrefix(line, "git clone "):
			// this checkout
		case strings.Contains(line, "go install ./cmd/navree"):
			if line != readme {
				t.Errorf("getting-started installs navree with %q, the README with %q: make them one", line, readme)
			}
		case strings.HasPrefix(line, "navree new "):
			out := sh(t, in, clone, line)
			if !strings.Contains(out, "Wrote the app github.com/acme/crm in ../crm, built against the framework's clone "+repoRoot()+". Next:\n") {
				t.Errorf("%s printed:\n%s", line, out)
			}
			ran++
		default:
			t.Errorf("getting-started's step 1 has a line the test does not know how to run: %s", line)
		}
	}
	if ran != 1 {
		t.Fatalf("getting-started's step 1 has no navree new:\n%s", step1)
	}
	// The replace is relative when the app and the checkout share a top
	// folder (both in /tmp), else absolute: either way, this checkout.
	mod, _ := os.ReadFile(filepath.Join(app, "go.mod"))
	_, replaced, _ := strings.Cut(string(mod), "\nreplace github.com/navree/navree => ")
	replaced, _, _ = strings.Cut(replaced, "\n")
	if !filepath.IsAbs(replaced) {
		replaced = filepath.Join(app, replaced)
	}
	if replaced != repoRoot() {
		t.Errorf("the new app's go.mod does not replace the framework with this checkout, %s:\n%s", repoRoot(), mod)
	}
	if _, err := os.Stat(filepath.Join(app, ".git")); err != nil {
		t.Errorf("navree new ran no git init: %v", err)
	}

	// The transcripts: each "$ command" and the lines it prints.
	dir, commands := clone, 0
	for _, c := range transcripts(section) {
		if to, ok := strings.CutPrefix(c.command, "cd "); ok {
			dir = filepath.Join(dir, to)
			continue
		}
		got := strings.ReplaceAll(sh(t, in, dir, c.command), app, docsApp)
		if normalize(got) != normalize(c.output) {
			t.Errorf("$ %s\nprinted:\n%s\ngetting-started.md says (ids, times and durations apart):\n%s", c.command, got, c.output)
		}
		commands++
		if c.command == "navree make:job contacts export" {
			fillInThePayload(t, section, filepath.Join(dir, "contacts", "export.go"))
		}
	}
	if dir != app || commands < 4 {
		t.Fatalf("getting-started's transcripts ran %d commands, the last in %s, not in the new app", commands, dir)
	}
	sh(t, in, app, "go vet ./...")
}

// fillInThePayload does what step 3 says after make:job: it gives the
// job in file the payload of the page's first Go block there.
func fillInThePayload(t *testing.T, section, file string) {
	t.Helper()
	_, step3, _ := strings.Cut(section, "**3. ")
	_, block, _ := strings.Cut(step3, "```go\n")
	payload := structExport.FindString(block)
	src, err := os.ReadFile(file)
	if err != nil || payload == "" || !structExport.Match(src) {
		t.Fatalf("step 3 fills in the payload of %s (%v) with the type Export of its first Go block:\n%s", file, err, block)
	}
	if err := os.WriteFile(file, structExport.ReplaceAll(src, []byte(payload)), 0o644); err != nil {
		t.Fatal(err)
	}
}

var structExport = regexp.MustCompile(`(?s)type Export struct \{.*?\n\}`)

// docsApp is where the page's app lives, as its outputs show it.
const docsApp = "/home/ada/crm"

// sh runs line with sh in dir, in the environment of in, and returns
// what it printed, failing the test when it fails.
func sh(t *testing.T, in installation, dir, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, in.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("$ %s (in %s, offline): %v\n%s", line, dir, err, out)
	}
	return string(out)
}

// codeBlock is the lines of the first indented code block of md.
func codeBlock(md string) []string {
	var lines []string
	for _, line := range strings.Split(md, "\n") {
		if code, ok := strings.CutPrefix(line, "    "); ok {
			lines = append(lines, code)
		} else if len(lines) > 0 {
			break
		}
	}
	return lines
}

// transcript is a command of a page and what it prints.
type transcript struct{ command, output string }

// transcripts are the page's commands, "    $ …", each with the indented
// lines after it.
func transcripts(md string) []transcript {
	var ts []transcript
	in := false
	for _, line := range strings.Split(md, "\n") {
		code, indented := strings.CutPrefix(line, "    ")
		switch command, ok := strings.CutPrefix(code, "$ "); {
		case indented && ok:
			ts, in = append(ts, transcript{command: command}), true
		case indented && in:
			ts[len(ts)-1].output += code + "\n"
		default:
			in = false
		}
	}
	return ts
}

var (
	uuids    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	times    = regexp.MustCompile(`time=\S+`)
	duration = regexp.MustCompile(`duration_ms=\d+|\b\d+(\.\d+)?m?s\b|\(cached\)`)
	spaces   = regexp.MustCompile(`[ \t]+`)
)

// normalize is out without its ids, times and durations, each run of
// blanks one space.
func normalize(out string) string {
	out = uuids.ReplaceAllString(out, "ID")
	out = times.ReplaceAllString(out, "time=T")
	out = duration.ReplaceAllString(out, "D")
	return strings.TrimSpace(spaces.ReplaceAllString(out, " "))
}
