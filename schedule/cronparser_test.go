package schedule

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// cronParserGolden is testdata/cron-parser/golden.json: for each
// expression, its next ticks in UTC from each start as the npm package
// cron-parser computes them, or cron-parser's error.
type cronParserGolden struct {
	MadeBy string      `json:"made_by"`
	Starts []time.Time `json:"starts"`
	Ticks  int         `json:"ticks"`
	Cases  []struct {
		Spec    string        `json:"spec"`
		Differs string        `json:"differs"` // why this package reads it otherwise
		Next    [][]time.Time `json:"next"`
		Error   string        `json:"error"`
	} `json:"cases"`
}

// TestNamesMatchCronParser compares this package with an outside engine,
// the npm package cron-parser, on the names of months and days of week:
// each name alone in upper, lower and title case, in lists, in ranges to
// and from each other name and a number, and under steps, with seconds
// and without, and the names and forms both engines refuse.
// testdata/cron-parser/golden.json holds cron-parser's answers (its
// version in made_by); generate.js beside it made it and says how to
// make it again. No node runs here.
//
// The golden set holds only expressions the two read alike: both take
// five or six fields and join the day fields with OR when both are
// restricted, but cron-parser counts a day field of "*/1" as restricted,
// takes a step after a single value (JUL/2), a step above the field's
// highest value and the Quartz forms, refuses a value given twice,
// and reads SUN ending a range as 0. Those cases are marked "differs",
// each with the reason docs/scheduling.md gives: for them the test
// checks that cron-parser still reads them otherwise (else they belong
// with the others), and TestNamesWhereCronParserDiffers what this
// package does with them.
func TestNamesMatchCronParser(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/cron-parser/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden cronParserGolden
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(golden.MadeBy, "cron-parser ") || len(golden.Starts) != 3 || golden.Ticks < 1 {
		t.Fatalf("golden.json: made by %q, %d starts, %d ticks", golden.MadeBy, len(golden.Starts), golden.Ticks)
	}
	ours := func(spec string) ([][]time.Time, error) {
		c, err := parseCron(spec)
		if err != nil {
			return nil, err
		}
		var next [][]time.Time
		for _, start := range golden.Starts {
			var ticks []time.Time
			for tick := start; len(ticks) < golden.Ticks; {
				tick = c.next(tick, time.UTC)
				ticks = append(ticks, tick)
			}
			next = append(next, ticks)
		}
		return next, nil
	}
	accepted, refused, differ := 0, 0, 0
	for _, tc := range golden.Cases {
		next, err := ours(tc.Spec)
		same := (err != nil) == (tc.Error != "")
		for i := range next {
			if same && i < len(tc.Next) && firstDifference(next[i], tc.Next[i]) != "" {
				same = false
			}
		}
		switch {
		case tc.Differs != "":
			differ++
			if same {
				t.Errorf("%q: cron-parser reads it as this package does now, where golden.json says %q: move it to the expressions both read alike in generate.js", tc.Spec, tc.Differs)
			}
		case tc.Error != "":
			refused++
			if err == nil {
				t.Errorf("%q: accepted; cron-parser refuses it (%s)", tc.Spec, tc.Error)
			}
		case err != nil:
			t.Errorf("%q: %v; cron-parser accepts it", tc.Spec, err)
		default:
			accepted++
			for i, start := range golden.Starts {
				if diff := firstDifference(next[i], tc.Next[i]); diff != "" {
					t.Errorf("%q from %s: %s (cron-parser's)", tc.Spec, start.Format(time.RFC3339), diff)
				}
			}
		}
	}
	if accepted < 200 || refused < 20 || differ < 10 {
		t.Fatalf("golden.json: %d expressions accepted, %d refused, %d read otherwise; want at least 200, 20 and 10", accepted, refused, differ)
	}
}

// TestNamesWhereCronParserDiffers: what this package does with the
// expressions golden.json marks as read otherwise by cron-parser, each as
// docs/scheduling.md says.
func TestNamesWhereCronParserDiffers(t *testing.T) {
	t.Parallel()
	tests := []struct{ spec, want string }{
		// SUN ending a range is Sunday: 7, not 0.
		{"0 0 * * MON-SUN", "Mon Tue Wed Thu Fri Sat Sun Mon"},
		{"0 0 * * SAT-SUN", "Sat Sun Sat Sun Sat Sun Sat Sun"},
		{"0 0 * * fri-sun/2", "Fri Sun Fri Sun Fri Sun Fri Sun"},
		// A value given twice is the value.
		{"0 0 1 JUL,jul *", "2027-07-01 2028-07-01 2029-07-01 2030-07-01 2031-07-01 2032-07-01 2033-07-01 2034-07-01"},
		{"0 0 * * SUN,7", "Sun Sun Sun Sun Sun Sun Sun Sun"},
		// A day field of "*/1" is "*": the 13th of July alone decides.
		{"0 0 13 JUL */1", "2026-07-13 2027-07-13 2028-07-13 2029-07-13 2030-07-13 2031-07-13 2032-07-13 2033-07-13"},
		// Refused.
		{"0 0 1 JUL/2 *", `month "JUL/2": a step needs * or a range before it, such as */2 or JUL-DEC/2`},
		{"0 0 * * TUE/2", `day of week "TUE/2": a step needs * or a range before it, such as */2 or TUE-SAT/2`},
		{"0 0 1 */13 *", "month step 13 is above 12"},
		{"0 0 * * */8", "day of week step 8 is above 7"},
		{"0 0 * * FRIL", `day of week "FRIL": "L" is not supported here; day of week takes 0-7 or SUN-SAT, Sunday being 0 or 7, lists (1,15), ranges (1-5) and steps (*/15)`},
		{"0 0 * * MON#2", `day of week "MON#2": "#" is not supported here; day of week takes 0-7 or SUN-SAT, Sunday being 0 or 7, lists (1,15), ranges (1-5) and steps (*/15)`},
		{"0 0 ? JUL WED", `day of month "?": "?" is not supported here; day of month takes 1-31, lists (1,15), ranges (1-5) and steps (*/15)`},
	}
	for _, tt := range tests {
		if got := eightTicks(tt.spec); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.spec, got, tt.want)
		}
	}
}

// eightTicks is spec's first eight ticks after Sunday 5 July 2026 in UTC,
// as days of week when the expression runs weekly or more often, as
// dates when less often; or its error.
func eightTicks(spec string) string {
	c, err := parseCron(spec)
	if err != nil {
		return err.Error()
	}
	var ticks []time.Time
	for tick := time.Date(2026, 7, 5, 0, 0, 0, 0, time.UTC); len(ticks) < 8; {
		tick = c.next(tick, time.UTC)
		ticks = append(ticks, tick)
	}
	layout := "2006-01-02"
	if ticks[7].Sub(ticks[0]) < 8*7*24*time.Hour {
		layout = "Mon"
	}
	var out []string
	for _, tick := range ticks {
		out = append(out, tick.Format(layout))
	}
	return strings.Join(out, " ")
}

// TestBadNamesSayWhatTheFieldTakes: a name that is none, or a name in a
// field that takes none, is refused naming the token, its field and what
// the field takes, and the name meant when it begins with one.
func TestBadNamesSayWhatTheFieldTakes(t *testing.T) {
	t.Parallel()
	const month, dow = "(month takes 1-12 or JAN-DEC)", "(day of week takes 0-7 or SUN-SAT, Sunday being 0 or 7)"
	quartz := func(field, item, op, takes string) string {
		return field + ` "` + item + `": "` + op + `" is not supported here; ` + field + " takes " + takes + ", lists (1,15), ranges (1-5) and steps (*/15)"
	}
	tests := []struct{ spec, want string }{
		{"0 0 1 JUK *", `month "JUK" is neither a number nor a name ` + month},
		{"0 0 1 JAN,JUK *", `month "JUK" is neither a number nor a name ` + month},
		{"0 0 1 JUK-DEC/2 *", `month "JUK" is neither a number nor a name ` + month},
		{"0 0 1 J *", `month "J" is neither a number nor a name ` + month},
		{"0 0 1 JULY *", `month "JULY" is neither a number nor a name: write JUL ` + month},
		{"0 0 1 Sept *", `month "Sept" is neither a number nor a name: write SEP ` + month},
		{"0 0 1 MON *", `month "MON" is neither a number nor a name ` + month},
		{"0 0 * * MONDAY", `day of week "MONDAY" is neither a number nor a name: write MON ` + dow},
		{"0 0 * * MON-WEDS", `day of week "WEDS" is neither a number nor a name: write WED ` + dow},
		{"0 0 * * tues", `day of week "tues" is neither a number nor a name: write TUE ` + dow},
		{"0 0 * * JAN", `day of week "JAN" is neither a number nor a name ` + dow},
		{"0 0 JUL * *", `day of month "JUL" is not a number (day of month takes 1-31)`},
		{"WED * * * *", `minute "WED" is not a number (minute takes 0-59)`},
		{"0 0 1 */JAN *", `month step "JAN" is not a number ` + month},
		{"0 0 1 JAN- *", `month "JAN-" is neither a value nor a range ` + month},
		{"0 0 1 DEC-JAN *", "month range DEC-JAN runs backwards: write DEC,JAN"},
		{"0 0 1 oct-feb *", "month range oct-feb runs backwards: write oct-dec,jan-feb"},
		{"0 0 * * SAT-MON", "day of week range SAT-MON runs backwards: write SAT,SUN-MON"},
		{"0 0 * * 5-0", "day of week range 5-0 runs backwards: write 5-7"},
		{"0 23-0 * * *", "hour range 23-0 runs backwards: write 23,0"},
		// An L or a W in a name is a letter; after a number or a name, or
		// alone, an operator.
		{"0 0 1 JULL *", quartz("month", "JULL", "L", "1-12 or JAN-DEC")},
		{"0 0 * * 5L", quartz("day of week", "5L", "L", "0-7 or SUN-SAT, Sunday being 0 or 7")},
		{"0 0 * * MON-fril", quartz("day of week", "MON-fril", "l", "0-7 or SUN-SAT, Sunday being 0 or 7")},
		{"0 0 15W * *", quartz("day of month", "15W", "W", "1-31")},
		{"0 0 LW * *", quartz("day of month", "LW", "L", "1-31")},
		{"0 0 L-3 * *", quartz("day of month", "L-3", "L", "1-31")},
		{"0 0 1 JAN,L *", quartz("month", "L", "L", "1-12 or JAN-DEC")},
	}
	for _, tt := range tests {
		_, err := parseCron(tt.spec)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q:\n got %v\nwant %s", tt.spec, err, tt.want)
		}
	}
}
