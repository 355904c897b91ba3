package app

import "syscall"

// childAttr puts a child of dev in a process group of its own, so that a
// Ctrl-C at the terminal reaches dev alone, which stops the child once,
// gracefully (the terminal's signal and dev's would be two, and a second
// signal ends a command at once); and sends it SIGTERM should dev die
// without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
