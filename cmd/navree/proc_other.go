//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// forwarded are the signals navree passes on to the app it runs.
var forwarded = []os.Signal{os.Interrupt}

// ownGroup starts the app as any process: process groups are Unix's.
func ownGroup() *syscall.SysProcAttr { return nil }

// killGroup kills p.
func killGroup(p *os.Process) { p.Kill() }

// signalOf is nil: the app's exit status says how it ended.
func signalOf(*exec.ExitError) os.Signal { return nil }

// reraise exits with status 1.
func reraise(os.Signal) { os.Exit(1) }
