//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// forwarded are the signals navree passes on to the app it runs.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// ownGroup starts a process in a process group of its own: a terminal's
// signals reach navree alone, which forwards them once.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills p's process group (p leads it: see ownGroup).
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }

// signalOf is the signal that ended the process of exit, or nil.
func signalOf(exit *exec.ExitError) os.Signal {
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return nil
}

// reraise ends navree by the signal s, as it ended the app, so a process
// manager sees a stop where it would have seen one: by s itself when it
// ends a process by default, else with status 128+s.
func reraise(s os.Signal) {
	n := s.(syscall.Signal)
	switch n {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL, syscall.SIGPIPE:
		signal.Reset(n)
		if syscall.Kill(os.Getpid(), n) == nil {
			time.Sleep(time.Second) // the signal ends navree meanwhile, on another thread maybe
		}
	}
	os.Exit(128 + int(n))
}
