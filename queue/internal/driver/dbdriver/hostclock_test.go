package dbdriver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// host is a test's host: its boot and its monotonic clock, which the test
// moves.
type host struct {
	boot  string
	since atomic.Int64 // ns since the boot
}

// process is a process of the host whose wall clock reads wall.
func (h *host) process(wall time.Time) *hostClock {
	return &hostClock{boot: func() string { return h.boot }, sinceBoot: func() time.Duration { return time.Duration(h.since.Load()) },
		wall: func() time.Time { return wall }}
}

// TestTheHostClockIsSharedAndStepFree: every process on a SQLite file
// reads the same clock of reservations, counted from the boot as the
// first one saw it, whatever its own wall clock says (one started after
// the system clock jumped an hour ahead agrees with one started before);
// it moves only with the monotonic clock; after a reboot it starts anew
// from the wall clock.
func TestTheHostClockIsSharedAndStepFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drv, d := openSQLite(t)
	h := &host{boot: "boot-1"}
	h.since.Store(int64(time.Hour))
	wall := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	first := h.process(wall)
	a, err := first.now(ctx, drv.base)
	if err != nil || a != wall.UnixMilli() {
		t.Fatalf("the first process reads %d, %v; want its wall clock, %d", a, err, wall.UnixMilli())
	}
	h.since.Add(int64(5 * time.Second))
	second := h.process(wall.Add(5*time.Second + time.Hour)) // started after a step of an hour
	for _, p := range []*hostClock{first, second} {
		if got, _ := p.now(ctx, drv.base); got != a+5000 {
			t.Fatalf("a process reads %d, want %d: 5 s after the first read", got, a+5000)
		}
	}
	// A Driver of another process reads it from the database.
	other := newSQLite(d)
	other.host = h.process(wall.Add(-24 * time.Hour))
	if got, err := other.at(ctx, 0); err != nil || got != a+5000 {
		t.Fatalf("another process's driver stamps %v, %v; want %d", got, err, a+5000)
	}
	// After a reboot, the first process anchors anew; reservations are
	// stamped with the clock.
	rebooted := &host{boot: "boot-2"}
	rebooted.since.Store(int64(30 * time.Second))
	later := wall.Add(48 * time.Hour)
	drv.host = rebooted.process(later)
	if _, _, err := drv.Insert(ctx, nil, job(1)); err != nil {
		t.Fatal(err)
	}
	jobs, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 1, At: 0, Limit: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ReservedAt != later.UnixMilli() {
		t.Fatalf("reserved %+v, %v; want it stamped %d, the wall clock of the new boot's first process", jobs, err, later.UnixMilli())
	}
}
