package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The zones of the differential tests: no shift, shifts of an hour both
// ways of the year, a 30-minute shift, a 2-hour shift, and an offset of
// 5:45 that never shifts.
var testZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll", "Asia/Kathmandu"}

// testSpecs are the expressions of the differential tests: times in and
// around the hours the clocks change in every zone above, stepped fields,
// both day fields, descriptors, and seconds.
var testSpecs = []string{
	"0 3 * * *", "30 1 * * *", "0 2 * * *", "30 2 * * *", "15 2 * * *", "45 1 * * *", "59 1 * * *",
	"0 1 * * *", "0 9 * * *", "0 0 * * *", "0 23 * * *", "0 4 * * *",
	"0,30 1-2 * * *", "*/10 2 * * *", "*/7 1-3 * * *", "0 1-3 * * *", "20 1-4/2 * * *", "*/30 0-4 * * *", "0 1,2,3 * * *",
	"5 */2 * * *", "0 * * * *", "30 * * * *", "15,45 * * * *", "*/15 * * * *", "0 */3 * * *", "* * * * *",
	"@hourly", "@daily", "@weekly", "@monthly", "@yearly",
	"0 0 * * 0", "30 3 * * SUN", "0 12 * * 1-5", "0 2 * 3 0", "45 2 * 10 SUN",
	"0 9 13 * 5", "0 0 */2 * 1", "0 0 1,15 * *",
	"30 0 3 * * *", "*/20 30 1 * * *", "0 0,30 2 * * *",
}

func loadZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestNextMatchesTheReferenceAroundEveryTransition: for every expression
// above, in six zones, from starts every 17 minutes and 13 seconds over
// the 26 hours either side of each change of offset of 2026 and 2027,
// Next is the reference's next tick.
func TestNextMatchesTheReferenceAroundEveryTransition(t *testing.T) {
	t.Parallel()
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := 0
	for _, zone := range testZones {
		loc := loadZone(t, zone)
		anchors := transitions(loc, from, to)
		for _, spec := range testSpecs {
			p := mustPlan(t, spec, zone)
			r := refParse(spec)
			for _, anchor := range anchors {
				lo, hi := anchor.Add(-26*time.Hour), anchor.Add(26*time.Hour)
				want := refTicks(r, loc, lo.Add(-27*time.Hour), lo.Add(-time.Hour), hi.Add(27*time.Hour))
				i := 0 // the first of want after start: the starts only grow
				for start := lo; start.Before(hi); start = start.Add(17*time.Minute + 13*time.Second) {
					for i < len(want) && !want[i].After(start) {
						i++
					}
					if i == len(want) {
						continue // a sparse expression: TestNextMatchesTheReferenceOverTwoYears has it
					}
					cases++
					if got := p.next(start); !got.Equal(want[i]) {
						t.Errorf("%s %q from %s: next %s, want %s", zone, spec, start.In(loc).Format(time.RFC3339),
							got.In(loc).Format(time.RFC3339), want[i].In(loc).Format(time.RFC3339))
						break
					}
				}
			}
		}
	}
	if cases < 50000 {
		t.Fatalf("%d cases compared, want over 50,000", cases)
	}
	t.Logf("%d cases compared", cases)
}

// TestNextMatchesTheReferenceOverTwoYears: the expressions that run on
// some days only, chained tick after tick through 2026 and 2027 in six
// zones, are the reference's ticks.
func TestNextMatchesTheReferenceOverTwoYears(t *testing.T) {
	t.Parallel()
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, zone := range testZones {
		loc := loadZone(t, zone)
		for _, spec := range []string{"@weekly", "@monthly", "@yearly", "0 0 * * 0", "30 3 * * SUN", "0 2 * 3 0", "45 2 * 10 SUN", "0 9 13 * 5", "0 0 1,15 * *"} {
			p := mustPlan(t, spec, zone)
			want := refTicks(refParse(spec), loc, from.Add(-48*time.Hour), from, to)
			var got []time.Time
			for tick := p.next(from.Add(-time.Second)); tick.Before(to); tick = p.next(tick) {
				got = append(got, tick)
			}
			if diff := firstDifference(got, want); diff != "" {
				t.Errorf("%s %q over 2026-2027: %s", zone, spec, diff)
			}
		}
	}
}

func firstDifference(got, want []time.Time) string {
	for i := range min(len(got), len(want)) {
		if !got[i].Equal(want[i]) {
			return fmt.Sprintf("tick %d is %s, want %s", i, got[i].UTC().Format(time.RFC3339), want[i].UTC().Format(time.RFC3339))
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d ticks, want %d", len(got), len(want))
	}
	return ""
}

// TestNextHasNoSearchHorizon: the 29th of February from 1 March 2096 is
// in 2104, eight years on (2100 is no leap year), in every zone.
func TestNextHasNoSearchHorizon(t *testing.T) {
	t.Parallel()
	for _, zone := range testZones {
		loc := loadZone(t, zone)
		p := mustPlan(t, "0 0 29 2 *", zone)
		start := time.Date(2096, 3, 1, 0, 0, 0, 0, loc)
		got := p.next(start)
		if want := time.Date(2104, 2, 29, 0, 0, 0, 0, loc); !got.Equal(want) {
			t.Errorf("%s: next after %s is %s, want %s", zone, start, got, want)
		}
		want := refTicks(refParse("0 0 29 2 *"), loc, start.AddDate(0, 0, -2), start, start.AddDate(9, 0, 0))
		if len(want) != 1 || !got.Equal(want[0]) {
			t.Errorf("%s: next %s, the reference says %v", zone, got, want)
		}
		// Past the last transition the zone database records, offsets
		// come from its rule, and Go's zone bounds err on the last day of
		// a leap year: the ticks stay right there.
		for _, spec := range []string{"0 * * * *", "30 1 * * *", "*/20 * 31 12 *"} {
			from, to := time.Date(2096, 12, 29, 0, 0, 0, 0, time.UTC), time.Date(2097, 1, 3, 0, 0, 0, 0, time.UTC)
			p := mustPlan(t, spec, zone)
			var got []time.Time
			for tick := p.next(from.Add(-time.Second)); tick.Before(to); tick = p.next(tick) {
				got = append(got, tick)
			}
			if diff := firstDifference(got, refTicks(refParse(spec), loc, from.Add(-48*time.Hour), from, to)); diff != "" {
				t.Errorf("%s %q at the end of 2096: %s", zone, spec, diff)
			}
		}
	}
}

// TestShiftsOfAnySize: the days the clocks change by 30 minutes, an hour
// or two, each rule by name (the parser library had these wrong).
func TestShiftsOfAnySize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone, spec, start string
		want              []string
	}{
		// A 30-minute shift: 03:00 exists on the day the clocks go forward.
		{"Australia/Lord_Howe", "0 3 * * *", "2026-10-04 00:00", []string{"2026-10-04 03:00 +11", "2026-10-05 03:00 +11"}},
		{"Australia/Lord_Howe", "30 1 * * *", "2026-10-03 12:00", []string{"2026-10-04 01:30 +1030", "2026-10-05 01:30 +11"}},
		{"Australia/Lord_Howe", "@weekly", "2026-09-28 00:00", []string{"2026-10-04 00:00 +1030", "2026-10-11 00:00 +11"}},
		// ... and on the day they go back (02:00 to 01:30), 01:45 comes
		// twice: once for fixed hours, at each real instant for "*".
		{"Australia/Lord_Howe", "45 1 * * *", "2026-04-05 00:00", []string{"2026-04-05 01:45 +11", "2026-04-06 01:45 +1030"}},
		{"Australia/Lord_Howe", "45 * * * *", "2026-04-05 00:00", []string{"2026-04-05 00:45 +11", "2026-04-05 01:45 +11", "2026-04-05 01:45 +1030", "2026-04-05 02:45 +1030"}},
		// A 2-hour shift: 01:00 becomes 03:00; 01:30 and 02:00 run at 03:00.
		{"Antarctica/Troll", "30 1 * * *", "2026-03-29 00:00", []string{"2026-03-29 03:00 +02", "2026-03-30 01:30 +02"}},
		{"Antarctica/Troll", "0 2 * * *", "2026-03-29 00:00", []string{"2026-03-29 03:00 +02", "2026-03-30 02:00 +02"}},
		// Spring forward in New York: 02:00 and 02:30 run once, as the
		// clocks land at 03:00; so do the six ticks of */10 2.
		{"America/New_York", "0,30 1-2 * * *", "2026-03-08 00:00", []string{"2026-03-08 01:00 EST", "2026-03-08 01:30 EST", "2026-03-08 03:00 EDT", "2026-03-09 01:00 EDT"}},
		{"America/New_York", "*/10 2 * * *", "2026-03-08 00:00", []string{"2026-03-08 03:00 EDT", "2026-03-09 02:00 EDT"}},
		{"America/New_York", "30 2 * * *", "2026-03-08 00:00", []string{"2026-03-08 03:00 EDT", "2026-03-09 02:30 EDT"}},
		// An hour field of */N runs at real instants only: 02:05 does not
		// exist, and nothing runs in its place.
		{"America/New_York", "5 */2 * * *", "2026-03-08 00:00", []string{"2026-03-08 00:05 EST", "2026-03-08 04:05 EDT"}},
		// Fall back: fixed hours once, at the first; "*" at both.
		{"America/New_York", "*/30 1 * * *", "2026-11-01 00:00", []string{"2026-11-01 01:00 EDT", "2026-11-01 01:30 EDT", "2026-11-02 01:00 EST"}},
		{"America/New_York", "30 * * * *", "2026-11-01 00:40", []string{"2026-11-01 01:30 EDT", "2026-11-01 01:30 EST", "2026-11-01 02:30 EST"}},
		{"Europe/Berlin", "30 2 * * *", "2026-10-25 00:00", []string{"2026-10-25 02:30 CEST", "2026-10-26 02:30 CET"}},
		{"Asia/Kathmandu", "0 9 * * *", "2026-12-03 09:00", []string{"2026-12-04 09:00 +0545"}},
	}
	for _, tt := range tests {
		loc := loadZone(t, tt.zone)
		start, err := time.ParseInLocation("2006-01-02 15:04", tt.start, loc)
		if err != nil {
			t.Fatal(err)
		}
		p := mustPlan(t, tt.spec, tt.zone)
		var got []string
		for tick := start; len(got) < len(tt.want); {
			tick = p.next(tick)
			got = append(got, tick.In(loc).Format("2006-01-02 15:04 MST"))
		}
		if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
			t.Errorf("%s %q from %s:\n got %s\nwant %s", tt.zone, tt.spec, tt.start, strings.Join(got, ", "), strings.Join(tt.want, ", "))
		}
	}
}

// TestInvalidExpressionsNameTheirField: every expression that does not
// parse is refused naming the field and what it takes, in words of its
// own; reversed ranges are refused with the ranges to write.
func TestInvalidExpressionsNameTheirField(t *testing.T) {
	t.Parallel()
	tests := []struct{ spec, want string }{
		{"61 * * * *", "minute 61 is above 59 (minute takes 0-59)"},
		{"0 24 * * *", "hour 24 is above 23 (hour takes 0-23)"},
		{"0 0 0 * *", "day of month 0 is below 1 (day of month takes 1-31)"},
		{"0 0 32 * *", "day of month 32 is above 31 (day of month takes 1-31)"},
		{"0 0 * 13 *", "month 13 is above 12 (month takes 1-12 or JAN-DEC)"},
		{"0 0 * * 8", "day of week 8 is above 7 (day of week takes 0-7 or SUN-SAT, Sunday being 0 or 7)"},
		{"60 0 0 * * *", "second 60 is above 59 (second takes 0-59)"},
		{"FOO * * * *", `minute "FOO" is not a number (minute takes 0-59)`},
		{"0 0 * FOO *", `month "FOO" is neither a number nor a name (month takes 1-12 or JAN-DEC)`},
		{"0 0 * * MONDAY", `day of week "MONDAY" is neither a number nor a name: write MON (day of week takes 0-7 or SUN-SAT, Sunday being 0 or 7)`},
		{"-5 * * * *", `minute "-5" is neither a value nor a range (minute takes 0-59)`},
		{"1,,2 * * * *", `minute "1,,2" has an empty item (minute takes 0-59)`},
		{"5-1 * * * *", "minute range 5-1 runs backwards: write 5-59,0-1"},
		{"0 22-2 * * *", "hour range 22-2 runs backwards: write 22-23,0-2"},
		{"0 0 * * FRI-MON", "day of week range FRI-MON runs backwards: write FRI-SAT,SUN-MON"},
		{"0 0 * * 5-1", "day of week range 5-1 runs backwards: write 5-6,0-1"},
		{"0 0 * * 7-1", "day of week range 7-1 runs backwards: write 0-1"},
		{"0 0 * NOV-FEB *", "month range NOV-FEB runs backwards: write NOV-DEC,JAN-FEB"},
		{"*/0 * * * *", "minute step 0 is below 1"},
		{"*/61 * * * *", "minute step 61 is above 59"},
		{"*/x * * * *", `minute step "x" is not a number (minute takes 0-59)`},
		{"5/15 * * * *", `minute "5/15": a step needs * or a range before it, such as */15 or 5-59/15`},
		{"0 0 * * 5#2", `day of week "5#2": "#" is not supported here; day of week takes 0-7 or SUN-SAT, Sunday being 0 or 7, lists (1,15), ranges (1-5) and steps (*/15)`},
		{"0 0 L * *", `day of month "L": "L" is not supported here; day of month takes 1-31, lists (1,15), ranges (1-5) and steps (*/15)`},
		{"0 0 ? * MON", `day of month "?": "?" is not supported here; day of month takes 1-31, lists (1,15), ranges (1-5) and steps (*/15)`},
		{"0 3 * *", "it has 4 fields, where cron takes 5 (minute hour day-of-month month day-of-week), 6 with seconds first, or a descriptor such as @daily"},
		{"0 0 0 3 * * *", "it has 7 fields, where cron takes 5"},
		{"", "it has 0 fields, where cron takes 5"},
		{"@fortnightly", `unknown descriptor "@fortnightly"; there are @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly`},
	}
	for _, tt := range tests {
		_, err := parseCron(tt.spec)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: %v\nwant %s", tt.spec, err, tt.want)
		}
		for _, internal := range []string{"strconv", "Atoi", "DowNth", "option", "parsing"} {
			if err != nil && strings.Contains(err.Error(), internal) {
				t.Errorf("%q: %v shows a library's internals", tt.spec, err)
			}
		}
	}
	for _, spec := range []string{"0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 FEB *"} {
		if _, err := parseCron(spec); err != errNeverFires {
			t.Errorf("%q: %v, want that it never fires", spec, err)
		}
	}
	for _, spec := range []string{"0 0 31 2,3 *", "0 0 29 2 *", "0 0 31 2 MON", "0 0 * * 7", "0 0 * * 5-7", "0 0 * jan-MAR sun", "@Daily", "0 0 1-31/2 * *"} {
		if _, err := parseCron(spec); err != nil {
			t.Errorf("%q: %v, want it accepted", spec, err)
		}
	}
}

// TestTheDayFieldsJoinAsPOSIXCronDoes: with both day fields restricted
// (anything but "*", "*/2" included), a day matching either runs; with
// one of them "*", the other decides.
func TestTheDayFieldsJoinAsPOSIXCronDoes(t *testing.T) {
	t.Parallel()
	days := func(spec string) []int {
		p := mustPlan(t, spec, "UTC")
		var out []int
		for tick := p.next(time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)); tick.Month() == time.July; tick = p.next(tick) {
			out = append(out, tick.Day())
		}
		return out
	}
	tests := []struct {
		spec string
		want string
	}{
		{"0 0 */2 * 1", "[1 3 5 6 7 9 11 13 15 17 19 20 21 23 25 27 29 31]"}, // odd days or Mondays (6, 13, 20, 27)
		{"0 0 13 * 5", "[3 10 13 17 24 31]"},                                 // the 13th or Fridays
		{"0 0 * * 5", "[3 10 17 24 31]"},                                     // Fridays
		{"0 0 13 * *", "[13]"},
		{"0 0 */1 * 5", "[3 10 17 24 31]"}, // "*/1" is "*"
	}
	for _, tt := range tests {
		if got := fmt.Sprint(days(tt.spec)); got != tt.want {
			t.Errorf("%q in July 2026: days %v, want %s", tt.spec, got, tt.want)
		}
	}
}
