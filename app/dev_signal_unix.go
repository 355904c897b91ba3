//go:build unix

package app

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// stopChild asks a child of dev to stop gracefully: SIGTERM, as a
// process manager does; a second call ends it at once.
func stopChild(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// stoppedByDev reports whether err, a child's end, is the SIGTERM that
// stopChild sent: a child it cut short while starting, which is a stop
// (see [App.Main]), not a failure.
func stoppedByDev(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == syscall.SIGTERM
}
