package rate_test

import (
	"math/rand/v2"
	"testing"

	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/driver"
)

// grant is a reservation started by a window, as a reference keeps it:
// at its true time.
type grant struct {
	at int64
	n  int
}

// exact counts the grants in the window (from, to], by their true
// times.
func exact(grants []grant, from, to int64) int {
	n := 0
	for _, g := range grants {
		if g.at > from && g.at <= to {
			n += g.n
		}
	}
	return n
}

// TestAWindowNeverHoldsMoreThanItsLimit checks the sliding window log
// against a brute-force reference that keeps every reservation at its
// true time: after every take, no window of the rate's length ending
// then holds more than Max (what an outside API that counts by any
// window sees); and a take that starts fewer than asked finds the window
// a slice longer full (a reservation counts at most a slice too long).
// Reopens is when the next take succeeds: not a millisecond earlier.
func TestAWindowNeverHoldsMoreThanItsLimit(t *testing.T) {
	for _, r := range []driver.Rate{{Max: 1, PerMs: 1000}, {Max: 10, PerMs: 1000}, {Max: 3, PerMs: 50}, {Max: 100, PerMs: 60_000}, {Max: 7, PerMs: 1}} {
		rng := rand.New(rand.NewPCG(uint64(r.Max), uint64(r.PerMs)))
		slice := max(1, (r.PerMs+rate.Slices-1)/rate.Slices)
		var w rate.Window
		var grants []grant
		now := int64(1_700_000_000_000)
		for range 5000 {
			now += rng.Int64N(r.PerMs/4 + 2)
			want := 1 + rng.IntN(r.Max+2)
			before := ""
			if rng.IntN(10) == 0 { // a reservation stored and read back
				w = rate.ParseWindow(w.String())
			}
			reopens := w.Reopens(now, r)
			before = w.String()
			n := w.Take(now, r, want)
			if n > 0 {
				grants = append(grants, grant{now, n})
			}
			if reopens > now && n > 0 || reopens == now && n == 0 {
				t.Fatalf("%+v at %d: Reopens %d, yet Take(%d) = %d (window %q)", r, now, reopens, want, n, before)
			}
			if got := exact(grants, now-r.PerMs, now); got > r.Max {
				t.Fatalf("%+v at %d: %d reservations in the window ending now, over %d (window %q, took %d)", r, now, got, r.Max, before, n)
			}
			if n < want && exact(grants, now-r.PerMs-slice, now) < r.Max {
				t.Fatalf("%+v at %d: took %d of %d, yet the window a slice longer held only %d (window %q)",
					r, now, n, want, exact(grants, now-r.PerMs-slice, now), before)
			}
			if reopens > now {
				probe := rate.ParseWindow(before)
				if probe.Take(reopens-1, r, 1) != 0 {
					t.Fatalf("%+v: Reopens %d, yet a take at %d succeeds (window %q)", r, reopens, reopens-1, before)
				}
				probe = rate.ParseWindow(before)
				if probe.Take(reopens, r, 1) != 1 {
					t.Fatalf("%+v: Reopens %d, yet a take then fails (window %q)", r, reopens, before)
				}
			}
		}
		if len(grants) < 100 {
			t.Fatalf("%+v: only %d grants: the test exercised little", r, len(grants))
		}
	}
}

// TestLateReadingsKeepTheLimit: workers read the clock, then wait for
// one another's reservations (a lock, a loaded machine) before they take
// room, so a take may come with a reading older than the window's latest
// entry, by up to MaxLagMs. Whatever the lags, of any Max+1 reservations
// the last is made (at its true time, when an outside API would see it)
// at least a window after the first's reading, the time the reservation
// was stamped with: the log never moves an entry back for a late
// reading. Checked against the readings and true times of every take,
// stored and read back at random as the drivers do.
func TestLateReadingsKeepTheLimit(t *testing.T) {
	for _, r := range []driver.Rate{{Max: 4, PerMs: 1000}, {Max: 1, PerMs: 100}, {Max: 10, PerMs: 1000}, {Max: 3, PerMs: 50}} {
		rng := rand.New(rand.NewPCG(uint64(r.Max), uint64(r.PerMs)+1))
		var w rate.Window
		type take struct{ reading, at int64 }
		var taken []take
		now := int64(1_700_000_000_000)
		for range 5000 {
			now += rng.Int64N(r.PerMs/4 + 2)
			reading := now - rng.Int64N(min(rate.MaxLagMs, 3*r.PerMs)+1)
			if rng.IntN(10) == 0 {
				w = rate.ParseWindow(w.String())
			}
			for range w.Take(reading, r, 1+rng.IntN(2)) {
				taken = append(taken, take{reading, now})
			}
		}
		if len(taken) < 100 {
			t.Fatalf("%+v: only %d takes: the test exercised little", r, len(taken))
		}
		for i := range taken {
			// The Max+1 takes from i on whose readings are at or after
			// i's: the last of them made a window after i's reading.
			var later []int64
			for _, o := range taken[i:] {
				if o.reading >= taken[i].reading {
					later = append(later, o.at)
				}
			}
			if len(later) > r.Max && later[r.Max] < taken[i].reading+r.PerMs {
				t.Fatalf("%+v: %d reservations from the one read at %d, the last made at %d, within a window of that reading", r, r.Max+1, taken[i].reading, later[r.Max])
			}
		}
	}
}

// TestAWindowOutlivesAClockStep: a clock stepped back an hour leaves the
// limit closed for no longer than a window, and one stepped forward
// opens it.
func TestAWindowOutlivesAClockStep(t *testing.T) {
	r := driver.Rate{Max: 2, PerMs: 1000}
	var w rate.Window
	now := int64(10_000_000)
	if n := w.Take(now, r, 5); n != 2 {
		t.Fatalf("Take = %d, want 2", n)
	}
	back := now - 3_600_000
	if n := w.Take(back, r, 1); n != 0 {
		t.Fatalf("Take after the step back = %d, want 0: the window is full", n)
	}
	if got := w.Reopens(back, r); got > back+r.PerMs+16 {
		t.Fatalf("Reopens after a step back of an hour = %d, %d ms away; want at most a window", got, got-back)
	}
	if n := w.Take(back+r.PerMs+16, r, 5); n != 2 {
		t.Fatalf("Take a window after the step back = %d, want 2", n)
	}
	if n := w.Take(back+10*3_600_000, r, 5); n != 2 {
		t.Fatalf("Take after a step forward = %d, want 2", n)
	}
}

// TestAStoredWindowThatDoesNotParseIsForgotten: a window row written by
// hand costs the limit its memory, never an error.
func TestAStoredWindowThatDoesNotParseIsForgotten(t *testing.T) {
	w := rate.ParseWindow("1000:2 junk 900:1 2000:x 3000:-1 4000:3")
	if got := w.String(); got != "1000:2 4000:3" {
		t.Fatalf("ParseWindow kept %q, want %q", got, "1000:2 4000:3")
	}
}
