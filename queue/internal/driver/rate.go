package driver

import "context"

// Rates is what the rate limits add to a driver beside their part of a
// reservation: room taken for a call a handler makes (Queue.Meter).
type Rates interface {
	// Meter takes room for one in the window of key, at rate r, at at (on
	// the clock of reservations; 0 for the driver's own), as a reservation
	// of a job of that key does, and returns 0; or, when the window is
	// full, takes none and returns how long until it has room, in
	// milliseconds.
	Meter(ctx context.Context, key string, r Rate, at int64) (waitMs int64, err error)
}

// Rate is a rate limit: at most Max reservations in any window of PerMs
// milliseconds. Its windows are package rate's (queue/internal/control/rate).
type Rate struct {
	Max   int
	PerMs int64
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r.Max == 0 }
