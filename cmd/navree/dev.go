package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// The timing of navree dev: how often it looks at the files, how long
// they must hold still once changed before it builds, and how
// long an app it restarts has to stop after the first SIGTERM, and then
// after the second (the app's dev stops its processes at once on it),
// before it is killed.
const (
	devPoll     = 100 * time.Millisecond
	devSettle   = 50 * time.Millisecond
	devStopWait = 5 * time.Second
)

// devCommand is navree dev.
func devCommand() *cli.Command {
	return &cli.Command{
		Name:      "dev",
		Usage:     "Build the app here and run its dev command, rebuilt and restarted when a Go file, a template or the config changes",
		ArgsUsage: "[ARGS of the app's dev]",
		Description: "Builds the app in this folder and runs APP dev (serve, queue:work and schedule:work, those the app has), then looks at\n" +
			"its files every 0.1 s: when a Go file (not a test), a template, a .toml, .sql, .css, .js or .svg file, go.mod, go.sum or\n" +
			".env changes, it builds the app again and, if the build succeeds, stops the app (SIGTERM) and starts the new one,\n" +
			"saying so in one line. A build that fails prints go build's errors; the app from before keeps running.\n" +
			"It builds with -ldflags=-w, without the debugger's DWARF tables, which take a third of a link's time.\n" +
			"Hidden folders, var, vendor, node_modules and testdata are left out. Ctrl-C stops the app and navree dev.",
		Action: func(c *cli.Context) error {
			if _, err := os.Stat("go.mod"); err != nil {
				return errors.New("dev: this folder holds no app (no go.mod): cd into an app, or make one with navree new")
			}
			return runDev(c.Context, c.Args().Slice(), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// devApp is the app navree dev runs.
type devApp struct {
	cmd    *exec.Cmd
	bin    string
	exited chan error // what Wait returned, once
}

// runDev builds the app in the working directory, runs its dev command
// with args, and rebuilds and restarts it as its files change, until a
// signal (SIGINT, SIGTERM or SIGHUP) stops it: navree forwards it, and
// any that follows, to the app, which has a process group of its own,
// and returns once the app has exited. ctx ends a build under way (the
// signal that stops navree ends it too).
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, forwarded...)
	defer signal.Stop(signals)
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "navree-dev-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	say := func(format string, a ...any) { fmt.Fprintf(stderr, "navree dev: "+format+"\n", a...) }

	builds := 0
	rebuild := func() (bin string, took time.Duration, ok bool) {
		builds++
		bin = filepath.Join(tmp, filepath.Base(wd)+"-"+strconv.Itoa(builds))
		began := time.Now()
		err := build(ctx, bin, stderr, "-ldflags=-w")
		return bin, time.Since(began), err == nil
	}
	var app *devApp
	start := func(bin string) error {
		cmd := exec.Command(bin, append([]string{"dev"}, args...)...)
		cmd.Args[0] = "navree" // its hints say run "navree migrate", not the temporary binary
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.SysProcAttr = ownGroup()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("dev: run the app: %w", err)
		}
		app = &devApp{cmd: cmd, bin: bin, exited: make(chan error, 1)}
		go func(a *devApp) { a.exited <- a.cmd.Wait() }(app)
		return nil
	}
	// exited is the channel of the running app's end, nil without one.
	exited := func() chan error {
		if app == nil {
			return nil
		}
		return app.exited
	}

	built, err := scan(".")
	if err != nil {
		return fmt.Errorf("dev: read the app's files: %w", err)
	}
	say("building the app (go build; a fresh clone's first build compiles its dependencies, a minute or more)")
	bin, took, ok := rebuild()
	switch {
	case ctx.Err() != nil:
		return nil
	case ok:
		say("built in %.1fs; running %s dev, rebuilt and restarted when one of its %d files changes; Ctrl-C stops it", took.Seconds(), filepath.Base(wd), len(built))
		if err := start(bin); err != nil {
			return err
		}
	default:
		say("the build failed (go build's errors above); it builds again when a file changes")
	}

	// look reads the files; an error (a folder made unreadable) is said
	// once, and the app keeps running until the files can be read again.
	var failed string
	look := func() (snapshot, bool) {
		now, err := scan(".")
		if err != nil {
			if err.Error() != failed {
				failed = err.Error()
				say("cannot read the app's files (%v); the app keeps running", err)
			}
			return nil, false
		}
		failed = ""
		return now, true
	}
	poll := time.NewTicker(devPoll)
	defer poll.Stop()
	for {
		select {
		case s := <-signals:
			if app == nil {
				return nil
			}
			return stopDev(app, s, signals)
		case err := <-exited():
			os.Remove(app.bin)
			app = nil
			how := "it exited"
			if err != nil {
				how = exitOf(err).Error()
			}
			say("the app stopped (%s); it starts again when a file changes", how)
		case <-poll.C:
			now, ok := look()
			if !ok || len(now.changes(built)) == 0 {
				continue
			}
			// A save may take more than one write: build once the files
			// have held still for devSettle (or a second has passed).
			for range time.Second / devSettle {
				time.Sleep(devSettle)
				again, ok := look()
				if !ok || len(again.changes(now)) == 0 {
					break
				}
				now = again
			}
			paths := now.changes(built)
			if len(paths) == 0 {
				continue // written back as it was
			}
			built = now
			bin, took, ok := rebuild()
			switch {
			case ctx.Err() != nil:
				continue // the signal that ended the build stops the app next
			case !ok && app != nil:
				say("%s; the build failed (go build's errors above); the app from before keeps running", changed(paths))
				continue
			case !ok:
				say("%s; the build failed (go build's errors above); it builds again when a file changes", changed(paths))
				continue
			}
			verb := "started"
			if app != nil {
				verb = "restarted"
				if s := restartDev(app, signals, say); s != nil {
					os.Remove(bin)
					return nil // the app has stopped, as the signal asked
				}
				os.Remove(app.bin)
				app = nil
			}
			say("%s; rebuilt in %.1fs, %s", changed(paths), took.Seconds(), verb)
			if err := start(bin); err != nil {
				return err
			}
		}
	}
}

// restartDev stops app for a restart: SIGTERM, another after devStopWait
// (the app's dev command stops its processes at once on a second), and
// SIGKILL to its process group after another. A signal to navree
// meanwhile is forwarded, and returned once the app has exited.
func restartDev(app *devApp, signals <-chan os.Signal, say func(string, ...any)) (got os.Signal) {
	app.cmd.Process.Signal(syscall.SIGTERM)
	wait := time.NewTimer(devStopWait)
	defer wait.Stop()
	for asked := 1; ; {
		select {
		case s := <-signals:
			got = s
			app.cmd.Process.Signal(s)
		case <-app.exited:
			return got
		case <-wait.C:
			if asked++; asked == 2 {
				say("the app has not stopped %s after SIGTERM; sending another, which stops it at once", devStopWait)
				app.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				say("the app has not stopped %s after the second SIGTERM; killing it", devStopWait)
				killGroup(app.cmd.Process)
			}
			wait.Reset(devStopWait)
		}
	}
}

// stopDev forwards s, and any signal that follows, to app, and returns
// once it has exited: nil, or the status it failed with (it said why).
func stopDev(app *devApp, s os.Signal, signals <-chan os.Signal) error {
	app.cmd.Process.Signal(s)
	for {
		select {
		case s := <-signals:
			app.cmd.Process.Signal(s)
		case err := <-app.exited:
			var status exitStatus
			if err := exitOf(err); errors.As(err, &status) {
				return status
			}
			return nil
		}
	}
}
