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

// TestAMisspeltFlagGetsTheNearest: a flag navree or its command does not
// have is one error naming the flag meant, not the error and the whole
// help page; navree exits with status 1, printing it alone.
func TestAMisspeltFlagGetsTheNearest(t *testing.T) { // not parallel: run sets urfave/cli's global help flag
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--verison"}, "unknown flag --verison; did you mean --version? (navree --help lists its commands and flags)"},
		{[]string{"--hlep"}, "unknown flag --hlep; did you mean --help? (navree --help lists its commands and flags)"},
		{[]string{"--frobnicate"}, "unknown flag --frobnicate (navree --help lists its commands and flags)"},
		{[]string{"new", "crm", "--modul", "github.com/acme/crm"}, "new: unknown flag --modul; did you mean --module? (navree new --help lists its flags)"},
		{[]string{"new", "--module"}, "new: flag --module needs a value (navree new --help lists its flags)"},
		{[]string{"make:job", "contacts", "export", "--dryrun"}, "make:job: unknown flag --dryrun; did you mean --dry-run? (navree make:job --help lists its flags)"},
		{[]string{"make:listener", "contacts", "greet", "--evnet", "contact_created"}, "make:listener: unknown flag --evnet; did you mean --event? (navree make:listener --help lists its flags)"},
	} {
		var out, errs bytes.Buffer
		if err := run(context.Background(), tt.args, &out, &errs); err == nil || err.Error() != tt.want || out.Len()+errs.Len() != 0 {
			t.Errorf("navree %s: %v, printed %q %q; want %s", strings.Join(tt.args, " "), err, out.String(), errs.String(), tt.want)
		}
	}
	cmd := exec.Command(os.Args[0], "--verison")
	cmd.Dir, cmd.Env = t.TempDir(), append(os.Environ(), runNavreeEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	want := "navree: unknown flag --verison; did you mean --version? (navree --help lists its commands and flags)\n"
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || stdout.Len() != 0 || stderr.String() != want {
		t.Fatalf("navree --verison: %v, printed %q and %q; want status 1 and %q", err, stdout.String(), stderr.String(), want)
	}
}

// tinyApp is the smallest app for navree's help to list the commands of:
// it prints an app's --help, as app.App does.
const tinyApp = `package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] != "--help" {
		fmt.Fprintln(os.Stderr, "tiny: only --help")
		os.Exit(1)
	}
	fmt.Print("NAME:\n   tiny\n\nCOMMANDS:\n   greet    Say hello\n   help, h  Shows a list of commands or help for one command\n" +
		"   queue:\n     queue:work  Run queued jobs until stopped\n\nGLOBAL OPTIONS:\n   --help, -h     show help\n")
}
`

// TestHelpInAnAppListsItsCommands: in the folder of an app (its go.mod
// requires the framework), navree's help lists navree's commands, then
// the app's, which navree runs; elsewhere navree's alone. An app that
// does not build is said so, go build's error with it, below the help.
func TestHelpInAnAppListsItsCommands(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command: ", err)
	}
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-buildvcs=false")
	navree := func(dir string, args ...string) (string, string) {
		t.Helper()
		t.Chdir(dir)
		var out, errs bytes.Buffer
		if err := run(context.Background(), args, &out, &errs); err != nil {
			t.Fatalf("navree %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, out.String(), errs.String())
		}
		return out.String(), errs.String()
	}
	own, _ := navree(t.TempDir(), "--help")
	if !strings.Contains(own, "\n   make:job ") || strings.Contains(own, "OF THE APP") {
		t.Fatalf("navree --help outside an app:\n%s", own)
	}
	write := func(dir string, files map[string]string) {
		t.Helper()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	app := t.TempDir()
	write(app, map[string]string{"main.go": tinyApp, "go.mod": "module example.com/tiny\n\ngo 1.26.0\n\nrequire " + frameworkModule + " v0.0.0\n\nreplace " +
		frameworkModule + " => " + repoRoot() + "\n"})
	want := own + "\nCOMMANDS OF THE APP IN THIS FOLDER (navree COMMAND builds and runs it):\n   greet    Say hello\n   queue:\n     queue:work  Run queued jobs until stopped\n"
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {}} {
		if got, errs := navree(app, args...); got != want || errs != "" {
			t.Errorf("navree %s in an app printed:\n%s%s\nwant:\n%s", strings.Join(args, " "), got, errs, want)
		}
	}

	// A module that is no app (it does not require the framework): navree's alone.
	other := t.TempDir()
	write(other, map[string]string{"main.go": tinyApp, "go.mod": "module example.com/tiny\n\ngo 1.26.0\n"})
	if got, errs := navree(other, "--help"); got != own || errs != "" {
		t.Errorf("navree --help in a module that is no app printed:\n%s%s", got, errs)
	}

	// An app that does not build.
	write(app, map[string]string{"main.go": "package main\n\nfunc main() { undefined() }\n"})
	got, errs := navree(app, "--help")
	if wantErr := "\nThe app in this folder does not build, so its commands are not listed (navree COMMAND runs one once it builds). go build said:\n"; got != own ||
		!strings.HasPrefix(errs, wantErr) || !strings.Contains(errs, "undefined: undefined") {
		t.Errorf("navree --help in an app that does not build printed:\n%s\nand on stderr:\n%s", got, errs)
	}
}

// TestNewSaysWhatToDoNext: navree new ends with the next steps: run the
// app's job, then navree dev and the generators.
func TestNewSaysWhatToDoNext(t *testing.T) { // not parallel: run sets urfave/cli's global help flag
	dir := filepath.Join(t.TempDir(), "crm")
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"new", dir, "--module", "example.com/crm", "--framework-path", repoRoot(), "--no-git"}, &out, &errs); err != nil {
		t.Fatalf("navree new: %v\n%s%s", err, out.String(), errs.String())
	}
	want := "Wrote the app example.com/crm in " + dir + ", built against the framework's clone " + repoRoot() + ". Next:\n" +
		"  cd " + dir + "\n" +
		"  go run . migrate && go run . queue:dispatch hello.greet '{\"name\": \"Ada\"}' && go run . queue:work --stop-when-empty\n" +
		"  navree dev                        # serve and queue:work, rebuilt and restarted as you edit\n" +
		"  navree make:job contacts export   # a job of your own and its test; make:module, make:listener,\n" +
		"                                    # make:notification, make:mail, make:migration and make:command too\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Fatalf("navree new printed:\n%s\nwant it to end with:\n%s", out.String(), want)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	for _, line := range []string{"\n    navree dev\n", "\n    navree make:job MODULE NAME                     # navree make:job contacts export\n",
		"\n    navree make:command MODULE NAME                 # navree make:command contacts import\n"} {
		if err != nil || !strings.Contains(string(readme), line) {
			t.Errorf("the new app's README has no line %q (%v):\n%s", line, err, readme)
		}
	}
}
