package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
)

// ticks lists the entry's ticks in [from, to).
func ticks(t *testing.T, p plan, from, to time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	for tick := p.next(from.Add(-time.Millisecond)); !tick.IsZero() && tick.Before(to); tick = p.next(tick) {
		out = append(out, tick)
		if len(out) > 2000 {
			t.Fatal("too many ticks")
		}
	}
	return out
}

func noJob(time.Time) queue.Job { return nil }

func mustPlan(t *testing.T, spec, zone string) plan {
	t.Helper()
	p, err := compile(Entry{Name: "test", Spec: spec, Zone: zone, job: noJob, Where: "entry_test.go"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDaylightSavingDays: on the days the clocks change, in two zones, a
// daily entry runs once (at the next valid time when its time does not
// exist, at the first when it comes twice), and an hourly one at each
// real hour.
func TestDaylightSavingDays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone, spec string
		day        string // the local date the clocks change
		want       []string
	}{
		{"America/New_York", "30 2 * * *", "2026-03-08", []string{"2026-03-08 03:00 EDT"}},
		{"America/New_York", "30 1 * * *", "2026-11-01", []string{"2026-11-01 01:30 EDT"}},
		{"America/New_York", "0 3 * * *", "2026-11-01", []string{"2026-11-01 03:00 EST"}},
		{"Europe/Berlin", "30 2 * * *", "2026-03-29", []string{"2026-03-29 03:00 CEST"}},
		{"Europe/Berlin", "30 2 * * *", "2026-10-25", []string{"2026-10-25 02:30 CEST"}},
		{"America/New_York", "*/30 1 * * *", "2026-11-01", []string{"2026-11-01 01:00 EDT", "2026-11-01 01:30 EDT"}},
		{"America/New_York", "*/30 1 * * *", "2026-03-08", nil}, // 01:00 and 01:30 EST exist; checked below
	}
	for _, tt := range tests {
		p := mustPlan(t, tt.spec, tt.zone)
		loc, _ := time.LoadLocation(tt.zone)
		day, _ := time.ParseInLocation("2006-01-02", tt.day, loc)
		var got []string
		for _, tick := range ticks(t, p, day, day.AddDate(0, 0, 1)) {
			got = append(got, tick.In(loc).Format("2006-01-02 15:04 MST"))
		}
		if tt.want == nil {
			continue
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s %q on %s: %v, want %v", tt.zone, tt.spec, tt.day, got, tt.want)
		}
	}
	for _, tt := range []struct {
		zone, day string
		hours     int
	}{{"America/New_York", "2026-03-08", 23}, {"America/New_York", "2026-11-01", 25}, {"Europe/Berlin", "2026-03-29", 23}, {"Europe/Berlin", "2026-10-25", 25}} {
		p := mustPlan(t, "0 * * * *", tt.zone)
		loc, _ := time.LoadLocation(tt.zone)
		day, _ := time.ParseInLocation("2006-01-02", tt.day, loc)
		got := ticks(t, p, day, day.AddDate(0, 0, 1))
		if len(got) != tt.hours {
			t.Errorf("hourly in %s on %s: %d ticks, want one per real hour, %d", tt.zone, tt.day, len(got), tt.hours)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Sub(got[i-1]) != time.Hour {
				t.Errorf("hourly in %s on %s: %v then %v", tt.zone, tt.day, got[i-1], got[i])
			}
		}
	}
}

func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	t.Parallel()
	p, err := compile(Entry{Name: "sync", every: 15 * time.Minute, job: noJob}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 9, 7, 31, 0, time.UTC)
	if got := p.next(at); !got.Equal(time.Date(2026, 12, 3, 9, 15, 0, 0, time.UTC)) {
		t.Fatalf("next = %v", got)
	}
	if got := p.latest(at.Add(-time.Hour), at); !got.Equal(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("latest = %v", got)
	}
	if got := p.latest(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), at); !got.IsZero() {
		t.Fatalf("latest after the last tick = %v, want none", got)
	}
}
