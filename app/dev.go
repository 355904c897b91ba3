package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/navree/navree/app/term"
	"github.com/navree/navree/config"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// devPart is a command that dev runs, and the name its lines carry.
type devPart struct {
	name, command string
	style         term.Style
}

// devParts are the commands dev runs, those of them the app has.
func devParts() []devPart {
	return []devPart{
		{"web", "serve", term.Cyan},
		{"worker", "queue:work", term.Magenta},
		{"scheduler", "schedule:work", term.Blue},
	}
}

// devDriver is what dev sets queue.driver to in its children: the worker
// must see what serve and the scheduler dispatch, which a queue in each
// process's memory would keep to itself.
const devDriver = "APP_QUEUE__DRIVER=database"

type devIn struct {
	fx.In
	Config *config.Config `optional:"true"`
}

func (a *App) devCommand() Command {
	return Command{
		Name:  "dev",
		Usage: "Run serve, the workers and the scheduler in one terminal, until Ctrl-C",
		Description: "Runs serve, queue:work and schedule:work (those the app has) as processes of this binary, each line they print\n" +
			"prefixed with web, worker or scheduler. Jobs go through the database (queue.driver = database), as in production.\n" +
			"Ctrl-C or SIGTERM stops them all gracefully, a second one at once; when one ends, dev stops the others and fails.",
		Action: Uses(func(c *cli.Context, p devIn) error { return a.dev(c, p.Config) }),
	}
}

// child is a running command of dev.
type child struct {
	devPart
	cmd  *exec.Cmd
	err  error // what Wait returned
	done bool
}

// dev runs the dev parts the app has as child processes of its own binary
// until ctx ends or one of them does.
func (a *App) dev(c *cli.Context, cfg *config.Config) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("dev: find this program: %w", err)
	}
	var parts []devPart
	env := os.Environ()
	for _, part := range devParts() {
		if c.App.Command(part.command) == nil {
			continue
		}
		parts = append(parts, part)
		if part.command == "queue:work" {
			env = append(env, devDriver)
			if note := driverNote(cfg); note != "" {
				fmt.Fprintln(c.App.Writer, note)
			}
		}
	}
	width, names := 0, make([]string, len(parts))
	for i, part := range parts {
		width = max(width, len(part.name))
		names[i] = part.name + " (" + part.command + ")"
	}
	fmt.Fprintf(c.App.Writer, "Running %s; Ctrl-C stops them all.\n", andList(names))

	// Signals reach dev alone (the children have process groups of their
	// own): the first stops the children gracefully, a second at once.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)

	stdout, stderr := &lineWriter{w: c.App.Writer}, &lineWriter{w: c.App.ErrWriter}
	exited := make(chan *child, len(parts))
	var children []*child
	stopping, forced, signalled := false, false, 0
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		for _, ch := range children {
			if !ch.done {
				_ = stopChild(ch.cmd.Process)
			}
		}
	}
	var failure error
	for _, part := range parts {
		ch, err := startChild(exe, part, env, width, stdout, stderr, exited)
		if err != nil {
			failure = fmt.Errorf("dev: start %s (%s): %w", part.name, part.command, err)
			break
		}
		children = append(children, ch)
	}
	if failure != nil {
		stop()
	}
	ctxDone := c.Context.Done()
	for running := len(children); running > 0; {
		select {
		case <-ctxDone:
			ctxDone = nil
			stop()
		case <-signals:
			if signalled++; signalled > 1 {
				forced = true
				for _, ch := range children {
					if !ch.done {
						_ = stopChild(ch.cmd.Process) // its second signal
					}
				}
			}
			stop()
		case ch := <-exited:
			running--
			ch.done = true
			switch {
			case failure != nil || forced:
			case !stopping && ch.err != nil:
				failure = fmt.Errorf("dev: %s (%s) failed (%v); the others are stopped", ch.name, ch.command, ch.err)
			case !stopping:
				failure = fmt.Errorf("dev: %s (%s) ended; the others are stopped", ch.name, ch.command)
			case ch.err != nil && !stoppedByDev(ch.err):
				failure = fmt.Errorf("dev: %s (%s) failed to stop (%v)", ch.name, ch.command, ch.err)
			}
			stop()
		}
	}
	if forced {
		return fmt.Errorf("dev: stopped at once by a second signal: %w", context.Canceled)
	}
	return failure
}

// driverNote says that dev overrides queue.driver, when cfg sets it to
// another driver than the database.
func driverNote(cfg *config.Config) string {
	var queue struct {
		Driver string `koanf:"driver"`
	}
	if cfg == nil || cfg.Decode("queue", &queue) != nil || queue.Driver == "" || queue.Driver == "database" {
		return ""
	}
	return fmt.Sprintf("queue.driver is %s (from %s), but dev runs the jobs through the database so that the worker takes what serve dispatches.",
		queue.Driver, cfg.Source("queue.driver"))
}

// startChild starts part as a process of exe, its lines copied to stdout
// and stderr behind its name, and sends it to exited once it has ended
// and its output is copied.
func startChild(exe string, part devPart, env []string, width int, stdout, stderr *lineWriter, exited chan<- *child) (*child, error) {
	cmd := exec.Command(exe, part.command)
	cmd.Args[0] = os.Args[0] // its hints name commands as dev was run (go run ./cmd/app, navree, ./crm)
	cmd.Env = env
	cmd.SysProcAttr = childAttr()
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &child{devPart: part, cmd: cmd}
	pad := strings.Repeat(" ", width-len(part.name))
	var copied sync.WaitGroup
	for _, c := range []struct {
		from io.Reader
		to   *lineWriter
	}{{outPipe, stdout}, {errPipe, stderr}} {
		copied.Add(1)
		go func() {
			defer copied.Done()
			c.to.copyLines(c.from, term.Paint(c.to.w, part.style, part.name)+pad+" | ")
		}()
	}
	go func() {
		copied.Wait() // Wait closes the pipes: read them to the end first
		ch.err = cmd.Wait()
		exited <- ch
	}()
	return ch, nil
}

// lineWriter writes whole lines, one at a time, from several children.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// copyLines copies the lines of r to the writer, each behind prefix, until
// r ends; a last line without its end gets one.
func (lw *lineWriter) copyLines(r io.Reader, prefix string) {
	lines := bufio.NewReader(r)
	for {
		line, err := lines.ReadString('\n')
		if line != "" {
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			lw.mu.Lock()
			_, _ = io.WriteString(lw.w, prefix+line)
			lw.mu.Unlock()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_, _ = io.Copy(io.Discard, r)
			}
			return
		}
	}
}
