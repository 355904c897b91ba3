//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devapp is an app for navree dev: its dev command serves its version
// (version.go) on DEVAPP_ADDR, prints "serving VERSION PID", and on
// SIGINT or SIGTERM prints "VERSION stopped by SIGNAL" and exits; the
// version "crash" exits with status 1 at once.
const devapp = `package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "dev" {
		fmt.Fprintln(os.Stderr, "devapp: run me as devapp dev")
		os.Exit(2)
	}
	if version == "crash" {
		fmt.Fprintln(os.Stderr, "devapp: crashed")
		os.Exit(1)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	ln, err := net.Listen("tcp", os.Getenv("DEVAPP_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "devapp:", err)
		os.Exit(1)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, version) }))
	fmt.Printf("serving %s %d\n", version, os.Getpid())
	fmt.Printf("%s stopped by %v\n", version, <-signals)
}
`

// TestDevRebuildsAndRestartsTheApp: navree dev builds the app and runs
// its dev command; a saved Go file rebuilds and restarts it, with one
// line naming the file (files it does not watch, written before, are not
// named); a build error is printed and the old app keeps answering; an
// app that exits is started again by the next change; Ctrl-C stops the
// app and navree, which exits with status 0.
func TestDevRebuildsAndRestartsTheApp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds an app, four times")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command: ", err)
	}
	dir := filepath.Join(t.TempDir(), "devapp")
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	version := func(v string) { write("version.go", "package main\n\nconst version = "+v+"\n") }
	write("go.mod", "module example.com/devapp\n\ngo 1.26.0\n")
	write("main.go", devapp)
	version(`"one"`)
	addr := freeAddr(t)

	cmd := navreeCmd(dir, environ(map[string]string{"GOPROXY": "off", "GOFLAGS": "-buildvcs=false", "DEVAPP_ADDR": addr}), "dev")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	t.Cleanup(func() { // after a failure, the app too: it has a process group of its own
		cmd.Process.Kill()
		cmd.Wait()
		for _, line := range seen {
			var v string
			var pid int
			if n, _ := fmt.Sscanf(line, "serving %s %d", &v, &pid); n == 2 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		for s := bufio.NewScanner(out); s.Scan(); {
			lines <- s.Text()
		}
	}()
	// next is the next line of navree or the app.
	next := func() string {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("navree dev ended; it printed:\n%s", strings.Join(seen, "\n"))
			}
			seen = append(seen, line)
			return line
		case <-time.After(3 * time.Minute): // a bound for a hung test, not a timing
			t.Fatalf("navree dev printed nothing more in 3 minutes; it printed:\n%s", strings.Join(seen, "\n"))
		}
		return ""
	}
	// expect reads lines until one matches pattern, and returns its groups.
	expect := func(pattern string) []string {
		t.Helper()
		re := regexp.MustCompile("^" + pattern + "$")
		for {
			if m := re.FindStringSubmatch(next()); m != nil {
				return m
			}
		}
	}
	// navreeSays reads the app's lines up to navree's next one, which must be want.
	navreeSays := func(want string) {
		t.Helper()
		re := regexp.MustCompile("^navree dev: " + want + "$")
		for {
			if line := next(); strings.HasPrefix(line, "navree dev:") {
				if !re.MatchString(line) {
					t.Fatalf("navree dev said %q, want %q", line, want)
				}
				return
			}
		}
	}
	answers := func(want string) {
		t.Helper()
		resp, err := http.Get("http://" + addr)
		if err != nil {
			t.Fatalf("the app does not answer: %v", err)
		}
		defer resp.Body.Close()
		if body, _ := io.ReadAll(resp.Body); string(body) != want {
			t.Fatalf("the app answers %q, want %q", body, want)
		}
	}
	const took = `\d+\.\ds`

	navreeSays(`building the app \(go build; a fresh clone's first build compiles its dependencies, a minute or more\)`)
	navreeSays(`built in ` + took + `; running devapp dev, rebuilt and restarted when one of its 3 files changes; Ctrl-C stops it`)
	expect(`serving one \d+`)
	answers("one")

	// Files it does not watch, then the version: only version.go is named.
	write("main_test.go", "package main\n")
	write("var/cache.go", "package var\n")
	write(".git/x.go", "package git\n")
	write("main.go~", devapp)
	version(`"two"`)
	navreeSays(`version.go changed; rebuilt in ` + took + `, restarted`)
	if line := seen[len(seen)-2]; line != "one stopped by terminated" {
		t.Errorf("before the restart line the old app printed %q, want %q", line, "one stopped by terminated")
	}
	expect(`serving two \d+`)
	answers("two")

	version(`"three`) // a syntax error
	expect(`\./version\.go:3:\d+: newline in string`)
	navreeSays(`version.go changed; the build failed \(go build's errors above\); the app from before keeps running`)
	answers("two")

	version(`"crash"`)
	navreeSays(`version.go changed; rebuilt in ` + took + `, restarted`)
	navreeSays(`the app stopped \(exit status 1\); it starts again when a file changes`)
	if line := seen[len(seen)-2]; line != "devapp: crashed" {
		t.Errorf("before navree's line the app printed %q, want devapp: crashed", line)
	}

	version(`"four"`)
	navreeSays(`version.go changed; rebuilt in ` + took + `, started`)
	var pid int
	fmt.Sscan(expect(`serving four (\d+)`)[1], &pid)
	answers("four")

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil { // to navree alone, as a terminal's Ctrl-C
		t.Fatal(err)
	}
	expect(`four stopped by interrupt`)
	for line := range lines {
		seen = append(seen, line)
		t.Errorf("after the app stopped, navree dev printed %q", line)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("navree dev ended with %v, want status 0", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the app %d outlived navree dev: kill -0 = %v", pid, err)
	}
}

// freeAddr is a local address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
