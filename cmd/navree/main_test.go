package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestANewAppBuildsVetsAndPassesItsTests: navree new writes an app that
// builds, vets and passes its own tests at once, offline, against this
// checkout of the framework.
func TestANewAppBuildsVetsAndPassesItsTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated app (about 30 s)")
	}
	framework, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOPROXY", "off") // offline: every module comes from the cache
	t.Setenv("GOSUMDB", "off")
	dir := filepath.Join(t.TempDir(), "crm")
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"new", dir, "--module", "example.com/crm", "--framework-path", framework}, &out, &errs); err != nil {
		t.Fatalf("navree new: %v\n%s%s", err, out.String(), errs.String())
	}
	for _, want := range []string{"  wrote .gitignore\n", "  wrote README.md\n", "  wrote config/app.toml\n", "  wrote go.mod\n", "  wrote hello/greet.go\n",
		"  wrote hello/greet_test.go\n", "  wrote hello/module.go\n", "  wrote main.go\n", "  wrote main_test.go\n", "  wrote go.sum\n",
		"Wrote the app example.com/crm in " + dir + ". Next:\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("navree new did not print %q:\n%s", want, out.String())
		}
	}
	t.Setenv("GOFLAGS", "")
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the new app: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	// Its README's first command works.
	for _, args := range [][]string{{"run", ".", "migrate"}, {"run", ".", "queue:dispatch", "hello.greet", `{"name": "Ada"}`}, {"run", ".", "queue:work", "--stop-when-empty"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		if args[2] == "queue:work" && !strings.Contains(string(b), `msg="hello, Ada"`) {
			t.Fatalf("the worker did not run the greeting:\n%s", b)
		}
	}
}

func TestNewRefusesWhatItCannotWrite(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "main.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"new", full}, "new: " + full + " is not empty: choose a new folder"},
		{[]string{"new", filepath.Join(t.TempDir(), "x"), "--module", "Acme CRM"}, `new: "Acme CRM" is not a module path: use lower-case letters, digits and / . _ ~ -, such as github.com/acme/crm`},
		{[]string{"new", filepath.Join(t.TempDir(), "x"), "--framework-path", t.TempDir()}, "holds no go.mod: give a checkout of github.com/navree/navree"},
		{[]string{"new"}, "new takes one argument, the folder to write the app into: navree new crm"},
	}
	for _, tt := range tests {
		var out, errs bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("navree %v: %v, want %q", tt.args, err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Fatalf("a refused new wrote into %s: %v", full, entries)
	}
}

func TestAnotherCommandNeedsAnApp(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"queue:work"}, &out, &errs)
	if err == nil || err.Error() != `"queue:work" is not a navree command, and this folder holds no app (no go.mod) to run it: cd into an app, or make one with navree new` {
		t.Fatalf("navree queue:work outside an app: %v", err)
	}
}
