package dbdriver

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTheHostHasABootAndAMonotonicClock: on Linux the clock of
// reservations reads the real boot id and CLOCK_MONOTONIC.
func TestTheHostHasABootAndAMonotonicClock(t *testing.T) {
	t.Parallel()
	since := sinceBoot()
	before := since()
	if id := bootID(); len(id) != 36 || before <= 0 {
		t.Fatalf("boot %q, %s since it", id, before)
	}
	if after := since(); after < before {
		t.Fatalf("the monotonic clock went back from %s to %s", before, after)
	}
	var ts unix.Timespec // the clock itself agrees, to the millisecond
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil || time.Duration(ts.Nano())-since() > time.Millisecond {
		t.Fatalf("CLOCK_MONOTONIC reads %s, the reader %s", time.Duration(ts.Nano()), since())
	}
}
