package schedule

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// cronExpr is a parsed cron expression: the values each field allows, as
// bit sets (bit v set: v allowed).
type cronExpr struct {
	second, minute, hour, dom, month, dow uint64
	// domStar and dowStar say the day field was written "*" (or "*/1"):
	// with both day fields restricted, a day matching either runs.
	domStar, dowStar bool
	// byHour says the hour field was written "*" or "*/N": such an entry
	// runs at each real instant whose wall clock matches (twice in an
	// hour the clocks repeat, never in one they skip), where an entry of
	// fixed hours runs each matching wall-clock time once.
	byHour bool
}

// field is one field of a cron expression: its name in errors and the
// values it takes.
type field struct {
	name     string
	min, max int
	names    []string // names of min, min+1…, for month and day of week
	takes    string   // what it takes, for errors
}

var (
	secondField = field{name: "second", min: 0, max: 59, takes: "0-59"}
	minuteField = field{name: "minute", min: 0, max: 59, takes: "0-59"}
	hourField   = field{name: "hour", min: 0, max: 23, takes: "0-23"}
	domField    = field{name: "day of month", min: 1, max: 31, takes: "1-31"}
	monthField  = field{name: "month", min: 1, max: 12, takes: "1-12 or JAN-DEC",
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	dowField = field{name: "day of week", min: 0, max: 7, takes: "0-7 or SUN-SAT, Sunday being 0 or 7",
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
)

// descriptors are the expressions the @ forms stand for.
var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// parseCron reads spec: five fields (minute hour day-of-month month
// day-of-week), six with seconds first, or a descriptor. Its errors name
// the field and what the field takes.
func parseCron(spec string) (*cronExpr, error) {
	s := strings.TrimSpace(spec)
	if strings.HasPrefix(s, "@") {
		d, ok := descriptors[strings.ToLower(s)]
		if !ok {
			return nil, fmt.Errorf("unknown descriptor %q; there are @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly", s)
		}
		s = d
	}
	parts := strings.Fields(s)
	fields := []field{minuteField, hourField, domField, monthField, dowField}
	switch len(parts) {
	case 5:
		parts = append([]string{"0"}, parts...)
	case 6:
	default:
		return nil, fmt.Errorf("it has %d field%s, where cron takes 5 (minute hour day-of-month month day-of-week), 6 with seconds first, or a descriptor such as @daily", len(parts), plural(len(parts), "", "s"))
	}
	fields = append([]field{secondField}, fields...)
	sets := make([]uint64, 6)
	for i, f := range fields {
		set, err := f.parse(parts[i])
		if err != nil {
			return nil, err
		}
		sets[i] = set
	}
	c := &cronExpr{second: sets[0], minute: sets[1], hour: sets[2], dom: sets[3], month: sets[4], dow: sets[5],
		domStar: parts[3] == "*" || parts[3] == "*/1", dowStar: parts[5] == "*" || parts[5] == "*/1",
		byHour: strings.HasPrefix(parts[2], "*")}
	if c.dow&(1<<7) != 0 { // Sunday as 7
		c.dow = c.dow&^(1<<7) | 1
	}
	if !c.fires() {
		return nil, errNeverFires
	}
	return c, nil
}

var errNeverFires = fmt.Errorf("it never fires (such as the 31st of February)")

// fires reports whether some day of some year matches: with the day of
// month restricted alone, some allowed day must exist in an allowed month
// (the 29th of February in leap years).
func (c *cronExpr) fires() bool {
	if c.domStar || !c.dowStar {
		return true // every day, or every week, or either (both restricted)
	}
	longest := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<m) != 0 && c.dom&(1<<(longest[m]+1)-1) != 0 {
			return true
		}
	}
	return false
}

// parse reads one field: a comma-separated list of "*", values and
// ranges, "*" and ranges with an optional step ("*/15", "1-30/5").
// A value of month or day of week is a number or a name ("JUL-DEC/2",
// "MON-5"); SUN ending a range is 7 ("SAT-SUN").
func (f field) parse(text string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return 0, fmt.Errorf("%s %q has an empty item (%s takes %s)", f.name, text, f.name, f.takes)
		}
		if op := f.quartz(item); op != "" {
			return 0, fmt.Errorf("%s %q: %q is not supported here; %s takes %s, lists (1,15), ranges (1-5) and steps (*/15)", f.name, item, op, f.name, f.takes)
		}
		rng, stepText, stepped := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		if f.names != nil && f.max == 7 {
			hi = 6 // "*" in day of week: 0-6
		}
		switch low, high, isRange := strings.Cut(rng, "-"); {
		case rng == "*":
		case isRange && (low == "" || high == ""):
			return 0, fmt.Errorf("%s %q is neither a value nor a range (%s takes %s)", f.name, rng, f.name, f.takes)
		case isRange:
			var err error
			if lo, err = f.value(low); err != nil {
				return 0, err
			}
			if hi, err = f.value(high); err != nil {
				return 0, err
			}
			if hi == 0 && lo > 0 && f.names != nil && !isDigits(high) {
				hi = 7 // SUN ending a range of days of week: MON-SUN, SAT-SUN
			}
			if lo > hi {
				return 0, fmt.Errorf("%s range %s runs backwards: write %s", f.name, rng, f.backwards(low, high, lo, hi))
			}
		case stepped:
			last := strconv.Itoa(f.max)
			if _, ok := f.named(rng); ok {
				last = f.names[len(f.names)-1] // JUL-DEC/2, TUE-SAT/2
			}
			return 0, fmt.Errorf("%s %q: a step needs * or a range before it, such as */%s or %s-%s/%s", f.name, item, stepText, rng, last, stepText)
		default:
			v, err := f.value(rng)
			if err != nil {
				return 0, err
			}
			lo, hi = v, v
		}
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			switch {
			case err != nil || !isDigits(stepText):
				return 0, fmt.Errorf("%s step %q is not a number (%s takes %s)", f.name, stepText, f.name, f.takes)
			case n < 1:
				return 0, fmt.Errorf("%s step %d is below 1", f.name, n)
			case n > f.max:
				return 0, fmt.Errorf("%s step %d is above %d", f.name, n, f.max)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads a number or, for month and day of week, a name.
func (f field) value(text string) (int, error) {
	if isDigits(text) {
		n, err := strconv.Atoi(text)
		switch {
		case err != nil || n > f.max:
			return 0, fmt.Errorf("%s %s is above %d (%s takes %s)", f.name, text, f.max, f.name, f.takes)
		case n < f.min:
			return 0, fmt.Errorf("%s %s is below %d (%s takes %s)", f.name, text, f.min, f.name, f.takes)
		}
		return n, nil
	}
	if v, ok := f.named(text); ok {
		return v, nil
	}
	if f.names == nil {
		return 0, fmt.Errorf("%s %q is not a number (%s takes %s)", f.name, text, f.name, f.takes)
	}
	if len(text) > 3 {
		if v, ok := f.named(text[:3]); ok { // JULY, MONDAY, Sept
			return 0, fmt.Errorf("%s %q is neither a number nor a name: write %s (%s takes %s)", f.name, text, f.names[v-f.min], f.name, f.takes)
		}
	}
	return 0, fmt.Errorf("%s %q is neither a number nor a name (%s takes %s)", f.name, text, f.name, f.takes)
}

// named is the value of a name of month or day of week, in any case.
func (f field) named(text string) (int, bool) {
	for i, name := range f.names {
		if strings.EqualFold(text, name) {
			return f.min + i, true
		}
	}
	return 0, false
}

// quartz is the Quartz operator an item of the field uses, "L", "W", "#"
// or "?" as written, or "" for none. It reads the item's values first,
// so the L of JUL and the W of WED are letters of names: L, LW, 5L, FRIL,
// 15W, L-3, 5#2 and ? are the operators.
func (f field) quartz(item string) string {
	for _, tok := range strings.FieldsFunc(item, func(r rune) bool { return r == '-' || r == '/' }) {
		if _, ok := f.named(tok); ok {
			continue
		}
		if i := strings.IndexAny(tok, "?#"); i >= 0 {
			return tok[i : i+1]
		}
		body, last := tok[:len(tok)-1], tok[len(tok)-1:]
		_, named := f.named(body)
		switch {
		case strings.EqualFold(tok, "L") || strings.EqualFold(tok, "LW"):
			return tok[:1]
		case strings.ContainsAny(last, "LlWw") && (isDigits(body) || named): // 5L, FRIL, 15W
			return last
		}
	}
	return ""
}

// backwards is what a reversed range lo-hi means, written as two ranges
// in the notation of the reversed one ("22-23,0-2", "FRI-SAT,SUN-MON"),
// or as one where Sunday is 0 or 7 ("0-1" for 7-1, "5-7" for 5-0). A
// range of one value is written as the value ("DEC,JAN" for DEC-JAN).
func (f field) backwards(low, high string, lo, hi int) string {
	last, first := strconv.Itoa(f.max), strconv.Itoa(f.min)
	if f.names != nil && f.max == 7 {
		last = "6"
		if lo == 7 { // Sunday as 7 to a later day
			return "0-" + high
		}
		if hi == 0 { // a day to Sunday as 0
			return low + "-7"
		}
	}
	if f.names != nil && !isDigits(low) && !isDigits(high) {
		last, first = f.names[len(f.names)-1], f.names[0]
		if strings.ToLower(low+high) == low+high {
			last, first = strings.ToLower(last), strings.ToLower(first)
		}
	}
	upper, lower := low+"-"+last, first+"-"+high
	if strings.EqualFold(low, last) {
		upper = low
	}
	if strings.EqualFold(first, high) {
		lower = high
	}
	return upper + "," + lower
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// has reports whether set holds v.
func has(set uint64, v int) bool { return set&(1<<v) != 0 }

// from is the least value of set at or above v, or -1.
func from(set uint64, v int) int {
	rest := set >> v
	if rest == 0 {
		return -1
	}
	return v + bits.TrailingZeros64(rest)
}

// day reports whether the date matches the day fields.
func (c *cronExpr) day(y int, m time.Month, d int) bool {
	dom := has(c.dom, d)
	dow := has(c.dow, int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()))
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// nextWall is the first wall-clock time at or after w that the expression
// matches. Wall-clock times are seconds since 1970-01-01 00:00:00 of a
// calendar without zones: fields only, no shift of any clock.
func (c *cronExpr) nextWall(w int64) int64 {
	t := time.Unix(w, 0).UTC()
	y, m, d := t.Date()
	h, mi, s := t.Clock()
	for {
		switch {
		case !has(c.month, int(m)):
			y, m, d, h, mi, s = nextMonth(y, m)
			continue
		case d > daysIn(y, m):
			y, m, d, h, mi, s = nextMonth(y, m)
			continue
		case !c.day(y, m, d):
			d, h, mi, s = d+1, 0, 0, 0
			continue
		}
		if nh := from(c.hour, h); nh != h {
			if nh < 0 {
				d, h, mi, s = d+1, 0, 0, 0
				continue
			}
			h, mi, s = nh, 0, 0
		}
		if nmi := from(c.minute, mi); nmi != mi {
			if nmi < 0 {
				h, mi, s = h+1, 0, 0
				if h > 23 {
					d, h = d+1, 0
				}
				continue
			}
			mi, s = nmi, 0
		}
		if ns := from(c.second, s); ns != s {
			if ns < 0 {
				mi, s = mi+1, 0
				if mi > 59 {
					h, mi = h+1, 0
					if h > 23 {
						d, h = d+1, 0
					}
				}
				continue
			}
			s = ns
		}
		return time.Date(y, m, d, h, mi, s, 0, time.UTC).Unix()
	}
}

func nextMonth(y int, m time.Month) (int, time.Month, int, int, int, int) {
	if m == time.December {
		return y + 1, time.January, 1, 0, 0, 0
	}
	return y, m + 1, 1, 0, 0, 0
}

func daysIn(y int, m time.Month) int { return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day() }

// next is the expression's first tick after t in loc, by these rules,
// whatever the size of a shift of loc's clocks:
//
//   - A wall-clock time that occurs once runs then.
//   - Wall-clock times the clocks skip (spring forward) run once, when the
//     clocks land: at the first instant after the jump. An entry whose
//     hour field is "*" or "*/N" (byHour) does not run them: it runs at
//     real instants only.
//   - A wall-clock time that occurs twice (fall back) runs at its first
//     occurrence, or at both for a byHour entry.
//
// It walks the periods of constant offset of loc from t on: within one,
// a wall-clock time is the instant shifted by the offset, so the search
// is over calendar fields alone.
func (c *cronExpr) next(t time.Time, loc *time.Location) time.Time {
	u := t.Unix() + 1 // ticks are whole seconds, after t
	for {
		o, start, end := zone(u, loc)
		lowest := u + o // the least wall-clock time this period may still run
		if !c.byHour && start != noBound {
			seen := passed(start, loc) // wall-clock times before it ran, or were skipped
			if start == u && seen < start+o && c.nextWall(seen) < start+o {
				return time.Unix(start, 0).In(loc) // the clocks skipped a tick: it runs as they land
			}
			lowest = max(lowest, seen)
		}
		cand := c.nextWall(lowest) - o
		if end == noBound || cand < end {
			return time.Unix(cand, 0).In(loc)
		}
		u = end
	}
}

// noBound is a period's start or end that does not exist.
const noBound = math.MinInt64

// zone is the offset of loc at the instant u and the period of that
// offset, [start, end), in Unix seconds. Go's ZoneBounds is wrong on the
// last day of a leap year past the zone's last recorded transition (it
// gives an end before u, 2096-12-31 01:00 CET for 02:00): there the end
// is looked for hour by hour over the next two days, which can only add a
// boundary where the offset stays the same.
func zone(u int64, loc *time.Location) (offset, start, end int64) {
	at := time.Unix(u, 0).In(loc)
	_, off := at.Zone()
	s, e := at.ZoneBounds()
	start, end = s.Unix(), e.Unix()
	if s.IsZero() {
		start = noBound
	}
	switch {
	case e.IsZero():
		end = noBound
	case end <= u:
		end = u + 48*3600
		for h := u + 3600; h <= u+48*3600; h += 3600 {
			if _, o := time.Unix(h, 0).In(loc).Zone(); o != off {
				lo, hi := h-3600, h // the offset changes in (lo, hi]
				for hi-lo > 1 {
					if _, o := time.Unix((lo+hi)/2, 0).In(loc).Zone(); o == off {
						lo = (lo + hi) / 2
					} else {
						hi = (lo + hi) / 2
					}
				}
				end = hi
				break
			}
		}
	}
	return int64(off), start, end
}

// passed is the least wall-clock time in loc that no instant before start
// has shown: the high-water mark of the clocks before a period begins.
// Periods that end more than 26 hours (the widest span of offsets) before
// start cannot raise it.
func passed(start int64, loc *time.Location) int64 {
	hw := int64(math.MinInt64)
	for x := start; ; {
		o, s, _ := zone(x-1, loc)
		hw = max(hw, x+o)
		if s == noBound || s >= x || start-s > 26*3600 {
			return hw
		}
		x = s
	}
}
