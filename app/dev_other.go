//go:build !unix

package app

import (
	"os"
	"syscall"
)

// childAttr is nil where there are no process groups.
func childAttr() *syscall.SysProcAttr { return nil }

// stopChild ends a child of dev: without signals to send, at once.
func stopChild(p *os.Process) error { return p.Kill() }

// stoppedByDev reports true: stopChild ends a child at once, so a child
// that ends while dev stops them was stopped.
func stoppedByDev(error) bool { return true }
