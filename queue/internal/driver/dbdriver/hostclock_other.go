//go:build !linux

package dbdriver

import "time"

// bootID reports that this host has no boot to read: the wall clock
// stands in for the clock of reservations.
func bootID() string { return "" }

func sinceBoot() func() time.Duration { return func() time.Duration { return 0 } }
