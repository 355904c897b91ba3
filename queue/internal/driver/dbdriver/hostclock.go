package dbdriver

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// hostClock is the clock of reservations on SQLite: the host's monotonic
// clock, counted from the host's boot as the first worker after that boot
// saw it. Every process of a SQLite file runs on one host (WAL mode needs
// memory they share, so no network file system), so every worker reads
// the same time, and no step of the system clock moves it: an NTP
// correction, a virtual machine resumed after a suspend (the monotonic
// clock stands still while the host sleeps, as the jobs it runs do). The
// anchor is kept in the table queue_clock for the boot it belongs to: the
// first process after a reboot, every worker of the boot before having
// ended with it, anchors anew from the wall clock.
//
// Where the host has no boot to read (not Linux), the wall clock stands
// in, steps and all.
type hostClock struct {
	// boot reads the host's boot id, "" where there is none to read;
	// sinceBoot reads the monotonic time since the boot.
	boot      func() string
	sinceBoot func() time.Duration
	wall      func() time.Time

	mu     sync.Mutex
	read   bool   // the boot and the anchor are read
	id     string // the host's boot
	anchor int64  // when the boot was, Unix ms
}

func newHostClock() *hostClock {
	return &hostClock{boot: bootID, sinceBoot: sinceBoot(), wall: time.Now}
}

// now returns the time on the host's clock of reservations, reading the
// boot and its anchor from d the first time.
func (h *hostClock) now(ctx context.Context, d *base) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.read {
		if h.id = h.boot(); h.id != "" {
			anchor, err := d.anchor(ctx, h.id, h.wall().Add(-h.sinceBoot()).UnixMilli())
			if err != nil {
				return 0, fmt.Errorf("read the clock of reservations: %w", err)
			}
			h.anchor = anchor
		}
		h.read = true
	}
	if h.id == "" {
		return h.wall().UnixMilli(), nil
	}
	return h.anchor + h.sinceBoot().Milliseconds(), nil
}

// anchor returns the anchor stored for boot, storing anchor first when
// the stored one belongs to another boot or there is none.
func (d *base) anchor(ctx context.Context, boot string, anchor int64) (int64, error) {
	err := d.db.Write(ctx, func() error {
		if _, err := d.sqldb.ExecContext(ctx, "INSERT INTO queue_clock (id, boot_id, anchor_ms) VALUES (1, ?, ?) "+
			"ON CONFLICT (id) DO UPDATE SET boot_id = excluded.boot_id, anchor_ms = excluded.anchor_ms WHERE queue_clock.boot_id <> excluded.boot_id",
			boot, anchor); err != nil {
			return err
		}
		return d.sqldb.QueryRowContext(ctx, "SELECT anchor_ms FROM queue_clock WHERE id = 1").Scan(&anchor)
	})
	return anchor, err
}
