package rate

import (
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// Slices is how many parts a rate limit's window is cut into: its log
// keeps at most one entry a part.
const Slices = 64

// Window is the log of a rate limit's reservations: how many started in
// each slice of time, by the end of the slice (a reservation counts as
// made at the end of the slice it falls in, so that it leaves the window
// no earlier than it should), oldest first. A sliding window log: no
// window of PerMs ever holds more than Max reservations, whatever their
// rhythm, and after an idle window Max may start at once; a slice
// (PerMs/Slices) is the most a reservation is counted too long.
type Window struct {
	Ends   []int64
	Counts []int
}

// slice is the length of a slice of r's window, in milliseconds.
func slice(r driver.Rate) int64 { return max(1, (r.PerMs+Slices-1)/Slices) }

// MaxLagMs is how far a reading of the clock may lag the latest entry of
// a window and still be taken for a late reading rather than a clock
// stepped back: a worker that read its clock and then waited for another
// worker's reservation to commit (a lock, a loaded machine) holds a time
// earlier than that reservation's.
const MaxLagMs = 10_000

// at is the time a take at now counts as made. A reading of a slice
// before the latest entry's, by up to MaxLagMs, counts as made at the
// start of that entry's slice (no later than the reading that made it):
// entries then never move back, and none leaves the window before its
// time, so that of any Max+1 reservations the last is made at least
// PerMs after the first's reading, however late the readings. A clock
// stepped back further is a step: now, and count moves the entries back
// to it.
func (w *Window) at(now int64, r driver.Rate) int64 {
	if n := len(w.Ends); n > 0 && w.Ends[n-1] > ceilTo(now, slice(r)) && w.Ends[n-1]-now <= MaxLagMs {
		return w.Ends[n-1] - slice(r) + 1
	}
	return now
}

// count forgets the entries that left the window by now and returns how
// many reservations the window holds. An entry ending after the end of
// now's slice (a clock stepped back more than MaxLagMs) counts as ending
// then: such a clock step closes a limit for no longer than a window (a
// smaller one, for no longer than the step and a window).
func (w *Window) count(now int64, r driver.Rate) int {
	now = w.at(now, r)
	end := ceilTo(now, slice(r))
	keep, n := 0, 0
	for i, e := range w.Ends {
		e = min(e, end)
		if e+r.PerMs <= now {
			continue
		}
		w.Ends[keep], w.Counts[keep] = e, w.Counts[i]
		n += w.Counts[i]
		keep++
	}
	w.Ends, w.Counts = w.Ends[:keep], w.Counts[:keep]
	return n
}

// Take starts up to want reservations at now under r and returns how
// many it started: as many as the window has room for.
func (w *Window) Take(now int64, r driver.Rate, want int) int {
	now = w.at(now, r)
	n := min(want, w.Room(now, r))
	if n == 0 {
		return 0
	}
	end := ceilTo(now, slice(r))
	if last := len(w.Ends) - 1; last >= 0 && w.Ends[last] == end {
		w.Counts[last] += n
	} else {
		w.Ends, w.Counts = append(w.Ends, end), append(w.Counts, n)
	}
	return n
}

// Reopens returns when r's window next has room, as of now: now when it
// has room already.
func (w *Window) Reopens(now int64, r driver.Rate) int64 {
	over := w.count(now, r) - r.Max
	for i := 0; over >= 0 && i < len(w.Ends); i++ {
		if over -= w.Counts[i]; over < 0 {
			return w.Ends[i] + r.PerMs
		}
	}
	return now
}

// Room returns how many reservations the window has room for at now.
func (w *Window) Room(now int64, r driver.Rate) int { return max(0, r.Max-w.count(now, r)) }

// Empties returns when the window holds nothing any more: from then on
// it is as a window never taken.
func (w *Window) Empties(r driver.Rate) int64 {
	if len(w.Ends) == 0 {
		return 0
	}
	return w.Ends[len(w.Ends)-1] + r.PerMs
}

// String encodes w as stored: "end:count" entries, space-separated.
func (w *Window) String() string {
	var b strings.Builder
	for i, e := range w.Ends {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(e, 10))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(w.Counts[i]))
	}
	return b.String()
}

// ParseWindow decodes a stored window. What does not parse (a row
// written by hand) is left out: the limit then forgets those
// reservations rather than failing every reservation of its key.
func ParseWindow(s string) Window {
	var w Window
	for entry := range strings.FieldsSeq(s) {
		e, c, ok := strings.Cut(entry, ":")
		end, err1 := strconv.ParseInt(e, 10, 64)
		n, err2 := strconv.Atoi(c)
		if ok && err1 == nil && err2 == nil && n > 0 && (len(w.Ends) == 0 || end > w.Ends[len(w.Ends)-1]) {
			w.Ends, w.Counts = append(w.Ends, end), append(w.Counts, n)
		}
	}
	return w
}

// ceilTo rounds t up to a multiple of step.
func ceilTo(t, step int64) int64 {
	if r := t % step; r != 0 {
		if t < 0 {
			return t - r
		}
		return t - r + step
	}
	return t
}
