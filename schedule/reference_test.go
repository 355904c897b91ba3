package schedule

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// The brute-force reference the cron entries are tested against: it
// reads an expression by plain expansion of its fields, written apart
// from the code under test, and walks real instants a minute (a second
// for six fields) at a time, applying the rules docs/scheduling.md
// states:
//
//   - a wall-clock time that occurs once runs then;
//   - wall-clock times the clocks skip run once, at the first instant
//     after the jump, unless the hour field is written "*" or "*/N";
//   - a wall-clock time that occurs twice runs at its first occurrence,
//     or at both when the hour field is written "*" or "*/N";
//   - with both day fields restricted (not "*"), a day matching either
//     runs.

// refSpec is an expression as the reference reads it.
type refSpec struct {
	sets                   [6][64]bool // second minute hour dom month dow: whether each value is in
	domStar, dowStar, star bool        // star: the hour field begins with "*"
	step                   int64       // seconds between the instants walked
}

var refDescriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

func refParse(spec string) refSpec {
	if d, ok := refDescriptors[spec]; ok {
		spec = d
	}
	f := strings.Fields(spec)
	r := refSpec{step: 1}
	if len(f) == 5 {
		f = append([]string{"0"}, f...)
		r.step = 60
	}
	bounds := [6][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}
	names := [6][]string{4: {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
		5: {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
	num := func(i int, s string) int {
		if k := slices.Index(names[i], strings.ToLower(s)); k >= 0 {
			return k + bounds[i][0]
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			panic("reference: " + spec)
		}
		return n
	}
	for i, text := range f {
		for _, item := range strings.Split(text, ",") {
			base, stepText, _ := strings.Cut(item, "/")
			step := 1
			if stepText != "" {
				step = num(i, stepText)
			}
			lo, hi := bounds[i][0], bounds[i][1]
			if a, b, ok := strings.Cut(base, "-"); ok {
				lo, hi = num(i, a), num(i, b)
			} else if base != "*" {
				lo, hi = num(i, base), num(i, base)
			}
			for v := lo; v <= hi; v += step {
				if i == 5 {
					v := v % 7 // Sunday as 7
					r.sets[i][v] = true
					continue
				}
				r.sets[i][v] = true
			}
		}
	}
	r.domStar = f[3] == "*"
	r.dowStar = f[5] == "*"
	r.star = strings.HasPrefix(f[2], "*")
	return r
}

// match reports whether the wall-clock time w (fields read in UTC) is one
// of the expression's.
func (r refSpec) match(w time.Time) bool {
	hour, minute, second := w.Clock()
	return r.matchDay(w) && r.sets[2][hour] && r.sets[1][minute] && r.sets[0][second]
}

// matchDay reports whether the day of the wall-clock time w is one of the
// expression's: with both day fields restricted, a day matching either.
func (r refSpec) matchDay(w time.Time) bool {
	_, month, day := w.Date()
	dom, dow := r.sets[3][day], r.sets[5][int(w.Weekday())]
	if !r.domStar && !r.dowStar {
		return (dom || dow) && r.sets[4][int(month)]
	}
	return dom && dow && r.sets[4][int(month)]
}

// wallOf is the wall-clock time of the instant u in loc, as seconds of a
// calendar without zones.
func wallOf(u int64, loc *time.Location) int64 {
	_, off := time.Unix(u, 0).In(loc).Zone()
	return u + int64(off)
}

// refTicks walks the instants from walkFrom to to and returns the ticks
// in [keepFrom, to). walkFrom comes early enough before keepFrom for the
// walk to know which wall-clock times the clocks already showed.
func refTicks(r refSpec, loc *time.Location, walkFrom, keepFrom, to time.Time) []time.Time {
	var out []time.Time
	u := walkFrom.Unix() / r.step * r.step
	prev := wallOf(u-r.step, loc) // the wall clock an instant ago
	high := prev                  // the latest wall-clock time shown yet
	for u < to.Unix() {
		w := wallOf(u, loc)
		wt := time.Unix(w, 0).UTC()
		// Walk over a day that cannot match, when no clock change lies
		// in it: nothing runs there, and the walk stays brute force
		// where it matters.
		if !r.matchDay(wt) {
			midnight := time.Date(wt.Year(), wt.Month(), wt.Day()+1, 0, 0, 0, 0, time.UTC).Unix()
			if skip := (midnight-w)/r.step*r.step - 2*r.step; skip > 0 && wallOf(u+skip, loc) == w+skip {
				u += skip
				prev = wallOf(u-r.step, loc)
				high = max(high, prev)
				continue
			}
		}
		tick := false
		if r.star {
			tick = r.match(wt)
		} else {
			tick = w > high && r.match(wt)
			for x := max(prev, high) + r.step; x < w && !tick; x += r.step {
				tick = r.match(time.Unix(x, 0).UTC()) // skipped by a jump: runs now
			}
		}
		if tick && u >= keepFrom.Unix() {
			out = append(out, time.Unix(u, 0))
		}
		prev, high = w, max(high, w)
		u += r.step
	}
	return out
}

// transitions are loc's changes of offset in [from, to), or, for a zone
// without any, the first day of each quarter.
func transitions(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from; ; {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			break
		}
		_, a := end.Add(-time.Second).In(loc).Zone()
		_, b := end.In(loc).Zone()
		if a != b {
			out = append(out, end)
		}
		t = end
	}
	if len(out) == 0 {
		for m := from; m.Before(to); m = m.AddDate(0, 3, 0) {
			out = append(out, m)
		}
	}
	return out
}
