// Package backoff is how long a failed job waits before its next attempt,
// and how a backoff is stored with a job: "exponential:BASE_MS:MAX_MS" or
// "fixed:MS".
package backoff

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Backoff is a job's wait between attempts. The zero Backoff is unset.
type Backoff struct {
	fixed     bool
	base, max time.Duration
}

// Exponential waits base after the first failed attempt and doubles the
// wait after each one, up to max.
func Exponential(base, max time.Duration) Backoff { return Backoff{base: base, max: max} }

// Fixed waits d after every failed attempt.
func Fixed(d time.Duration) Backoff { return Backoff{fixed: true, base: d, max: d} }

// IsZero reports whether b is unset.
func (b Backoff) IsZero() bool { return b == Backoff{} }

// Negative reports whether b waits a negative time.
func (b Backoff) Negative() bool { return b.base < 0 || b.max < 0 }

// Delay is the wait after the given number of failed attempts (1 for the
// first). The first wait is base, even when base is above max; the later
// ones double from base and stop at max.
func (b Backoff) Delay(failures int) time.Duration {
	if b.fixed || failures <= 1 {
		return min(b.base, max(b.max, b.base))
	}
	d := b.base
	for range failures - 1 {
		if d >= b.max/2 {
			return b.max
		}
		d *= 2
	}
	return min(d, b.max)
}

// String is b as stored: "exponential:BASE_MS:MAX_MS" or "fixed:MS".
func (b Backoff) String() string {
	if b.fixed {
		return "fixed:" + strconv.FormatInt(b.base.Milliseconds(), 10)
	}
	return "exponential:" + strconv.FormatInt(b.base.Milliseconds(), 10) + ":" + strconv.FormatInt(b.max.Milliseconds(), 10)
}

// Parse reads a backoff written by [Backoff.String].
func Parse(s string) (Backoff, error) {
	parts := strings.Split(s, ":")
	ms := func(p string) (time.Duration, bool) {
		n, err := strconv.ParseInt(p, 10, 64)
		return time.Duration(n) * time.Millisecond, err == nil && n >= 0
	}
	switch {
	case len(parts) == 2 && parts[0] == "fixed":
		if d, ok := ms(parts[1]); ok {
			return Fixed(d), nil
		}
	case len(parts) == 3 && parts[0] == "exponential":
		base, ok1 := ms(parts[1])
		maxDelay, ok2 := ms(parts[2])
		if ok1 && ok2 {
			return Exponential(base, maxDelay), nil
		}
	}
	return Backoff{}, fmt.Errorf("not exponential:BASE_MS:MAX_MS or fixed:MS")
}
