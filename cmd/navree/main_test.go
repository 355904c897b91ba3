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

// TestMakeJob: make:job writes a job and its test into a new app and
// registers it; the app still builds and passes its tests.
func TestMakeJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated app")
	}
	framework, _ := filepath.Abs(filepath.Join("..", ".."))
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOSUMDB", "off")
	dir := filepath.Join(t.TempDir(), "crm")
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"new", dir, "--module", "example.com/crm", "--framework-path", framework}, &out, &errs); err != nil {
		t.Fatalf("navree new: %v\n%s", err, errs.String())
	}
	t.Chdir(dir)
	t.Setenv("GOFLAGS", "")
	make := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), append([]string{"make:job"}, args...), &out, &errs)
		return out.String(), err
	}
	if got, err := make("hello", "wave", "--dry-run"); err != nil || got != "  would create hello/wave.go\n  would create hello/wave_test.go\n  would edit hello/module.go\n" {
		t.Fatalf("make:job --dry-run: %q %v", got, err)
	}
	if _, err := os.Stat("hello/wave.go"); err == nil {
		t.Fatal("--dry-run wrote hello/wave.go")
	}
	if got, err := make("hello", "wave"); err != nil || got != "  created hello/wave.go\n  created hello/wave_test.go\n  edited hello/module.go\n" {
		t.Fatalf("make:job hello wave: %q %v", got, err)
	}
	mod, _ := os.ReadFile("hello/module.go")
	if !strings.Contains(string(mod), "\tqueue.Register[Greet](newGreetHandler),\n\tqueue.Register[Wave](newWaveHandler),\n\t// navree:jobs") {
		t.Fatalf("hello/module.go:\n%s", mod)
	}
	if got, err := make("contacts", "sync_calendar"); err != nil || !strings.HasSuffix(got, "  created contacts/module.go\nThe module contacts is new: add contacts.Module to the app's modules in main.go, and import it.\n") {
		t.Fatalf("make:job contacts sync_calendar: %q %v", got, err)
	}
	job, _ := os.ReadFile("contacts/sync_calendar.go")
	if !strings.Contains(string(job), `func (SyncCalendar) JobName() string { return "contacts.sync_calendar" }`) {
		t.Fatalf("contacts/sync_calendar.go:\n%s", job)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"hello", "wave"}, "make:job: hello/wave.go exists: choose another name, or remove it"},
		{[]string{"hello", "Wave"}, `make:job: the name "Wave" must be a Go identifier in lower snake case, not a keyword, such as contacts or export`},
		{[]string{"hello", "func"}, `make:job: the name "func" must be a Go identifier in lower snake case, not a keyword`},
		{[]string{"hello"}, "make:job takes a module and a job name, such as: navree make:job contacts export"},
	} {
		if _, err := make(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("make:job %v: %v, want %q", tt.args, err, tt.want)
		}
	}
	if err := os.WriteFile("hello/module.go", []byte("package hello\n\nvar Module = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := make("hello", "bye"); err == nil || err.Error() != `make:job: hello/module.go has no line "// navree:jobs" to add the job above: add queue.Register[Bye](newByeHandler), to its fx.Module by hand` {
		t.Fatalf("a module.go without the anchor: %v", err)
	}
	if _, err := os.Stat("hello/bye.go"); err == nil {
		t.Fatal("a refused make:job wrote hello/bye.go")
	}
	os.WriteFile("hello/module.go", mod, 0o644)
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}, {"test", "./..."}} {
		if b, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s after make:job: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
}
