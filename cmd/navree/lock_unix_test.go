//go:build unix

package main

import (
	"os"
	"syscall"
)

// lockModCache takes the lock of modCache until the process ends.
func lockModCache() error {
	f, err := os.OpenFile(modCache+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) // f stays open: the lock holds until the process exits
}
