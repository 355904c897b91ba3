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

// sinceBoot returns a reader of CLOCK_MONOTONIC, which counts from the
// boot, never steps, and stands still while the host is suspended. It
// reads the clock once, by a system call, and then adds the monotonic
// time Go's runtime reads (the same clock, without a system call) since.
func sinceBoot() func() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // it cannot fail for this clock
	base, at := time.Duration(ts.Nano()), time.Now()
	return func() time.Duration { return base + time.Since(at) }
}
