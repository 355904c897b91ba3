package driver

// Rate is a rate limit: at most Max reservations in any window of PerMs
// milliseconds. Its windows are package rate's (queue/internal/control/rate).
type Rate struct {
	Max   int
	PerMs int64
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r.Max == 0 }
