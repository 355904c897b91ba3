//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// navreeCmd is navree as a real process (the test binary, see TestMain),
// with args, in dir, its environment env and runNavreeEnv.
func navreeCmd(dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir, cmd.Env = dir, slices.Concat(env, []string{runNavreeEnv + "=1"})
	return cmd
}

// trimpathNavree is navree built with -trimpath, once: a navree that
// does not know the clone it was built from.
var trimpathNavree = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(pkgTmp, "navree-trimpath")
	out, err := exec.Command("go", "build", "-trimpath", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build -trimpath: %v\n%s", err, out)
	}
	return bin, nil
})

// TestAFailedNewWritesNothing: a navree new that fails, before writing or
// after, leaves no file, says why and what to do next, and exits with
// status 1, printing no go "exit status" line of its own.
func TestAFailedNewWritesNothing(t *testing.T) {
	t.Run("no framework to build against", func(t *testing.T) {
		t.Parallel()
		bin, err := trimpathNavree()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cmd := exec.Command(bin, "new", "crm", "--module", "github.com/acme/crm")
		cmd.Dir, cmd.Env = dir, environ(map[string]string{"GOPROXY": "off"})
		want := "navree: new: navree was not built from a clone of the framework (or was, with -trimpath), and no published version of it answers: github.com/navree/navree@latest: module lookup disabled by GOPROXY=off\n" +
			"Nothing was written. Next: install navree from a clone of the framework; the apps it makes build against that clone:\n" +
			"  git clone https://github.com/navree/navree && cd navree\n  go mod download && go install ./cmd/navree\n" +
			"or name a clone: navree new DIR --framework-path CLONE\n"
		failsWith(t, cmd, want)
		empty(t, dir)
	})
	for _, existed := range []bool{false, true} {
		t.Run(fmt.Sprintf("git init fails, the folder existed: %v", existed), func(t *testing.T) {
			in := installed(t)
			t.Parallel()
			dir := t.TempDir()
			fakeGit := filepath.Join(t.TempDir(), "git")
			if err := os.WriteFile(fakeGit, []byte("#!/bin/sh\necho 'fatal: cannot init here' >&2\nexit 128\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if existed {
				if err := os.Mkdir(filepath.Join(dir, "crm"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			env := slices.Concat(in.env, []string{"PATH=" + filepath.Dir(fakeGit) + string(os.PathListSeparator) + os.Getenv("PATH")})
			cmd := navreeCmd(dir, env, "new", "crm", "--module", "github.com/acme/crm")
			failsWith(t, cmd, "navree: new: git init: exit status 128: fatal: cannot init here\n"+
				"Nothing was written (navree new removed what it wrote). Next: run navree new again once git works, or with --no-git\n")
			if existed {
				empty(t, filepath.Join(dir, "crm"))
			} else {
				empty(t, dir)
			}
		})
	}
}

// failsWith runs cmd and checks it exits with status 1, printing want on
// standard error and nothing on standard output.
func failsWith(t *testing.T, cmd *exec.Cmd, want string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || stdout.String() != "" || stderr.String() != want {
		t.Fatalf("%s: %v, printed %q and\n%s\nwant status 1 and\n%s", strings.Join(cmd.Args[1:], " "), err, stdout.String(), stderr.String(), want)
	}
}

// empty checks that dir holds nothing.
func empty(t *testing.T, dir string) {
	t.Helper()
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Fatalf("%s holds %v (%v), want nothing", dir, entries, err)
	}
}

// sigapp is an app for navree to run: it prints "ready PID", then, as
// its argument says, waits for SIGINT or SIGTERM and exits with status 3
// ("stop"), waits for nothing and is killed ("die"), or fails at once,
// its error starting with the name it was run as ("fail").
const sigapp = `package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if os.Args[1] == "fail" { // as run: navree, not the binary it built
		fmt.Fprintln(os.Stderr, os.Args[0]+": it failed")
		os.Exit(1)
	}
	if os.Args[1] == "die" {
		fmt.Printf("ready %d\n", os.Getpid())
		time.Sleep(time.Hour) // until a signal kills it
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	fmt.Printf("ready %d\n", os.Getpid())
	fmt.Printf("got %v\n", <-signals)
	os.Exit(3)
}
`

// TestNavreeRunsTheAppAndForwardsSignals: navree ARGS builds the app in
// the folder and runs it; SIGINT or SIGTERM to navree alone reaches the
// app, navree waits for it and exits with its status, or by the signal
// that killed it, and adds no line of its own ("exit status 1").
func TestNavreeRunsTheAppAndForwardsSignals(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command: ", err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"go.mod": "module example.com/sigapp\n\ngo 1.26.0\n", "main.go": sigapp} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := environ(map[string]string{"GOPROXY": "off", "GOFLAGS": "-buildvcs=false"})
	t.Run("an app that fails", func(t *testing.T) {
		failsWith(t, navreeCmd(dir, env, "fail"), "navree: it failed\n")
	})
	for _, tt := range []struct {
		mode   string
		signal syscall.Signal
		want   string // how navree ends
	}{
		{"stop", syscall.SIGTERM, "exit status 3"},
		{"stop", syscall.SIGINT, "exit status 3"},
		{"die", syscall.SIGTERM, "signal: terminated"},
	} {
		t.Run(tt.mode+" on "+tt.signal.String(), func(t *testing.T) {
			cmd := navreeCmd(dir, env, tt.mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stdout)
			var pid int
			if !lines.Scan() {
				cmd.Wait()
				t.Fatalf("the app printed nothing; navree said: %s", stderr.String())
			}
			if _, err := fmt.Sscanf(lines.Text(), "ready %d", &pid); err != nil {
				t.Fatalf("the app printed %q", lines.Text())
			}
			if err := cmd.Process.Signal(tt.signal); err != nil { // to navree alone
				t.Fatal(err)
			}
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			err = cmd.Wait()
			if err == nil || err.Error() != tt.want {
				t.Errorf("navree ended with %v, want %s", err, tt.want)
			}
			if want := map[string]string{"stop": "got " + tt.signal.String() + "\n", "die": ""}[tt.mode]; rest.String() != want {
				t.Errorf("the app printed %q after ready, want %q", rest.String(), want)
			}
			if stderr.String() != "" {
				t.Errorf("navree printed %q on standard error, want nothing", stderr.String())
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the app %d outlived navree: kill -0 = %v", pid, err)
			}
		})
	}
}
