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
)

// runApp builds the app in the working directory and runs it with args,
// as go run would, but itself: in a process group of its own, so a
// terminal's Ctrl-C reaches it once, through navree, which forwards it
// SIGINT, SIGTERM and SIGHUP, and waits for it. It returns the app's exit
// status as an exitStatus (the app said why), or the signal that ended
// it as a killedBy; a build that fails is go build's exit status, its
// errors printed.
func runApp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	bin, tmp, err := buildApp(ctx, stderr)
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, forwarded...)
	defer signal.Stop(signals)
	app := exec.Command(bin, args...)
	// The app's hints say to run another command as navree COMMAND (run
	// "navree migrate" first), not as the binary, which is removed.
	app.Args[0] = "navree"
	app.Stdin, app.Stdout, app.Stderr = os.Stdin, stdout, stderr
	app.SysProcAttr = ownGroup()
	if err := app.Start(); err != nil {
		return fmt.Errorf("run the app: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Wait() }()
	for {
		select {
		case s := <-signals:
			app.Process.Signal(s) // an error: it has exited, and Wait says how
		case err := <-done:
			return exitOf(err)
		}
	}
}

// exitOf is the error of a process that ended with err: nil, its exit
// status, or the signal that ended it.
func exitOf(err error) error {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return err
	}
	if s := signalOf(exit); s != nil {
		return killedBy{s}
	}
	return exitStatus(exit.ExitCode())
}

// buildApp builds the app in the working directory into bin, in the
// temporary folder tmp (to remove once done, when not ""), go build's
// output going to stderr. A build that fails is go build's exit status.
func buildApp(ctx context.Context, stderr io.Writer) (bin, tmp string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	if tmp, err = os.MkdirTemp("", "navree-run-"); err != nil {
		return "", "", err
	}
	bin = filepath.Join(tmp, filepath.Base(wd))
	return bin, tmp, build(ctx, bin, stderr)
}

// build builds the app in the working directory into bin, with go
// build's flags, its output going to stderr. A build that fails is go
// build's exit status.
func build(ctx context.Context, bin string, stderr io.Writer, flags ...string) error {
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, flags...), "-o", bin, ".")...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return errors.New("stopped by a signal while go build built the app")
		}
		return exitOf(err) // go build printed why
	}
	return nil
}
