package dbdriver

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// bootID reads the id Linux gives the host's boot.
func bootID() string {
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(id))
}

// sinceBoot reads CLOCK_MONOTONIC, which counts from the boot, never
// steps, and stands still while the host is suspended.
func sinceBoot() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // it cannot fail for this clock
	return time.Duration(ts.Nano())
}
