package driver_test

import (
	"math/rand/v2"
	"testing"

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
		slice := max(1, (r.PerMs+driver.Slices-1)/driver.Slices)
		var w driver.Window
		var grants []grant
		now := int64(1_700_000_000_000)
		for range 5000 {
			now += rng.Int64N(r.PerMs/4 + 2)
			want := 1 + rng.IntN(r.Max+2)
			before := ""
			if rng.IntN(10) == 0 { // a reservation stored and read back
				w = driver.ParseWindow(w.String())
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
				probe := driver.ParseWindow(before)
				if probe.Take(reopens-1, r, 1) != 0 {
					t.Fatalf("%+v: Reopens %d, yet a take at %d succeeds (window %q)", r, reopens, reopens-1, before)
				}
				probe = driver.ParseWindow(before)
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

// TestAWindowOutlivesAClockStep: a clock stepped back an hour leaves the
// limit closed for no longer than a window, and one stepped forward
// opens it.
func TestAWindowOutlivesAClockStep(t *testing.T) {
	r := driver.Rate{Max: 2, PerMs: 1000}
	var w driver.Window
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
	w := driver.ParseWindow("1000:2 junk 900:1 2000:x 3000:-1 4000:3")
	if got := w.String(); got != "1000:2 4000:3" {
		t.Fatalf("ParseWindow kept %q, want %q", got, "1000:2 4000:3")
	}
}
