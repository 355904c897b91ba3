package app

import (
	"time"

	"go.uber.org/fx"
)

// Clock tells the time. Everything in Navree that decides by time (when a
// delayed job is due, when a reservation is stale) asks the app's Clock,
// so a test can fix it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real time, the app's Clock by default.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// WithClock replaces the app's Clock with c, for every module.
func WithClock(c Clock) fx.Option {
	return fx.Decorate(func(Clock) Clock { return c })
}
