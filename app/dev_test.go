//go:build unix

package app_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/navree/navree/app/term/termtest"
)

// devProcess is `crm dev` running, and what it has printed.
type devProcess struct {
	cmd    *exec.Cmd
	stdout chan string // its lines, closed at its end
	seen   []string    // the lines read so far
	stderr *syncBuffer
}

// syncBuffer is a buffer that one goroutine writes while another reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startDev starts `crm dev` with the extra environment env.
func startDev(t *testing.T, env ...string) *devProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "dev")
	cmd.Args[0] = "./crm" // as a person types it
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=1", "APP_HTTP__ADDR=127.0.0.1:0", "APP_ENV=", "NO_COLOR="}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &devProcess{cmd: cmd, stdout: make(chan string, 100), stderr: &syncBuffer{}}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	go func() {
		defer close(d.stdout)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			d.stdout <- lines.Text()
		}
	}()
	return d
}

// waitFor reads lines until each of want has been printed (a line
// matching it, a regular expression), failing the test if dev ends first.
func (d *devProcess) waitFor(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		re := regexp.MustCompile(w)
		for !slices.ContainsFunc(d.seen, re.MatchString) {
			line, ok := <-d.stdout
			if !ok {
				t.Fatalf("dev ended before printing %q; it printed:\n%s\nstderr:\n%s", w, strings.Join(d.seen, "\n"), d.stderr)
			}
			d.seen = append(d.seen, line)
		}
	}
}

// wait reads dev's output to its end and returns how it exited.
func (d *devProcess) wait() error {
	for line := range d.stdout {
		d.seen = append(d.seen, line)
	}
	return d.cmd.Wait()
}

// pids are the process ids the stand-ins printed.
func (d *devProcess) pids(t *testing.T) []int {
	var pids []int
	for _, line := range d.seen {
		if m := regexp.MustCompile(`\| ready pid=(\d+)`).FindStringSubmatch(line); m != nil {
			pid, _ := strconv.Atoi(m[1])
			pids = append(pids, pid)
		}
	}
	if len(pids) != 2 {
		t.Fatalf("the stand-ins printed %d pids: %q", len(pids), d.seen)
	}
	return pids
}

// gone fails the test if a process of pids still runs.
func gone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still runs after dev ended (kill 0: %v)", pid, err)
		}
	}
}

var started = []string{
	`^web       \| Serving HTTP on http://127\.0\.0\.1:\d+ \(Ctrl-C to stop\)$`,
	`^worker    \| ready pid=\d+ driver=database$`,
	`^scheduler \| ready pid=\d+ driver=database$`,
}

// TestDevStopsEveryPartOnASignal: dev runs serve, the worker and the
// scheduler, each line behind its name, jobs through the database even
// when the config says memory; SIGINT (Ctrl-C) or SIGTERM stops each
// gracefully, and dev exits 0 once they all have.
func TestDevStopsEveryPartOnASignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDev(t, "APP_QUEUE__DRIVER=memory")
			d.waitFor(t, started...)
			want := []string{
				"queue.driver is memory (from env APP_QUEUE__DRIVER), but dev runs the jobs through the database so that the worker takes what serve dispatches.",
				"Running web (serve), worker (queue:work) and scheduler (schedule:work); Ctrl-C stops them all.",
			}
			if !slices.Equal(d.seen[:2], want) {
				t.Fatalf("dev began with %q, want %q", d.seen[:2], want)
			}
			pids := d.pids(t)
			if err := d.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := d.wait(); err != nil {
				t.Fatalf("dev exited with %v after %s; stderr:\n%s", err, sig, d.stderr)
			}
			for _, line := range []string{"web       | Stopped serving HTTP.", "worker    | stopped", "scheduler | stopped"} {
				if !slices.Contains(d.seen, line) {
					t.Errorf("dev did not print %q:\n%s", line, strings.Join(d.seen, "\n"))
				}
			}
			if d.stderr.String() != "" {
				t.Errorf("dev printed on stderr:\n%s", d.stderr)
			}
			gone(t, pids)
		})
	}
}

// TestDevStopsTheOthersWhenOneFails: a part that fails ends dev with its
// error, the part's own error printed behind its name, the others
// stopped (gracefully, or while starting, which is no failure of theirs),
// and exit status 1.
func TestDevStopsTheOthersWhenOneFails(t *testing.T) {
	d := startDev(t, "DEV_TEST_FAIL=queue:work")
	var exit *exec.ExitError
	if err := d.wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("dev exited with %v, want status 1; stderr:\n%s", err, d.stderr)
	}
	// The worker's hint runs it as dev was run, not as the binary's path.
	want := "worker    | crm: it broke (run \"./crm queue:work\" to retry)\ncrm: dev: worker (queue:work) failed (exit status 1); the others are stopped\n"
	if d.stderr.String() != want {
		t.Errorf("stderr:\n%q\nwant\n%q", d.stderr, want)
	}
	for _, line := range d.seen {
		if strings.HasPrefix(line, "scheduler | ready") && !slices.Contains(d.seen, "scheduler | stopped") {
			t.Errorf("the scheduler started and did not stop gracefully:\n%s", strings.Join(d.seen, "\n"))
		}
	}
	for _, line := range d.seen {
		if m := regexp.MustCompile(`\| ready pid=(\d+)`).FindStringSubmatch(line); m != nil {
			pid, _ := strconv.Atoi(m[1])
			gone(t, []int{pid})
		}
	}
}

// TestDevEndsAtOnceOnASecondSignal: parts that do not stop are ended by a
// second signal, and dev ends as the signal ends a process.
func TestDevEndsAtOnceOnASecondSignal(t *testing.T) {
	d := startDev(t, "DEV_TEST_HANG=1")
	d.waitFor(t, started...)
	pids := d.pids(t)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, `^worker    \| stopping$`, `^scheduler \| stopping$`)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := d.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("dev exited with %v, want ended by SIGTERM; stderr:\n%s", err, d.stderr)
	}
	gone(t, pids)
}

// TestDevColoursItsPrefixesOnATerminal: on a terminal each part's name is
// in a colour of its own; off one, plain (the tests above).
func TestDevColoursItsPrefixesOnATerminal(t *testing.T) {
	tty := termtest.Open(t)
	cmd := exec.Command(os.Args[0], "dev")
	cmd.Env = append(os.Environ(), childEnv+"=1", "APP_HTTP__ADDR=127.0.0.1:0", "APP_ENV=", "NO_COLOR=", "TERM=xterm")
	cmd.Stdout, cmd.Stderr = tty.File, tty.File
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	tty.WaitFor(t, "\x1b[35mworker\x1b[0m    | ready")
	tty.WaitFor(t, "\x1b[34mscheduler\x1b[0m | ready")
	tty.WaitFor(t, "\x1b[36mweb\x1b[0m       | Serving HTTP on")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dev exited with %v:\n%s", err, tty.Output())
	}
}
