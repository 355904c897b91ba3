package schedule

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

type tickJob struct{}

func (tickJob) JobName() string { return "schedule.test_tick" }

// testApp is a migrated database and a queue to dispatch to, with a
// clock the test moves.
type testApp struct {
	db    *db.DB
	q     *queue.Queue
	clock *apptest.Clock
}

func newTestApp(t *testing.T, database fx.Option, start time.Time) testApp {
	t.Helper()
	a := testApp{clock: apptest.FixedClock(start)}
	apptest.New(t, database, db.Module(), queue.Module(), Module(),
		queue.HandleFunc(func(context.Context, tickJob, queue.JobContext) error { return nil }),
		app.WithClock(a.clock), fx.Populate(&a.db, &a.q))
	return a
}

// scheduler is a scheduler of the entries (spec, zone) named by their
// index, started at the app clock's time.
func (a testApp) scheduler(t *testing.T, zone string, specs []string, opts ...Option) *Scheduler {
	t.Helper()
	return a.schedulerNamed(t, "e", zone, specs, opts...)
}

// schedulerNamed is scheduler with the entries' names prefixed, so that
// entries new to the database can be made again.
func (a testApp) schedulerNamed(t *testing.T, prefix, zone string, specs []string, opts ...Option) *Scheduler {
	t.Helper()
	var entries []Entry
	for i, spec := range specs {
		entries = append(entries, CronFuncEntry(fmt.Sprintf("%s%d", prefix, i), spec, func(time.Time) queue.Job { return tickJob{} },
			append([]Option{In(zone)}, opts...)...))
	}
	s, err := New(Params{DB: a.db, Dispatcher: a.q, Clock: a.clock, Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eachDB(t *testing.T, f func(t *testing.T, database fx.Option)) {
	t.Run("sqlite", func(t *testing.T) { f(t, apptest.TempDatabase()) })
	t.Run("postgres", func(t *testing.T) { f(t, apptest.Postgres()) })
}

// runDueSpecs are the expressions of the RunDue tests: those of the Next
// tests, but for the one of every minute (Next's test has it).
func runDueSpecs() []string {
	var out []string
	for _, spec := range testSpecs {
		if spec != "* * * * *" && !strings.HasPrefix(spec, "*/20 ") {
			out = append(out, spec)
		}
	}
	return out
}

// oddShifts are the zones whose clocks change by an hour, 30 minutes and
// two hours: the RunDue tests' zones on PostgreSQL, whose claims each
// wait for the disk, and in -short runs.
var oddShifts = []string{"America/New_York", "Australia/Lord_Howe", "Antarctica/Troll"}

// TestRunDueDispatchesTheReferencesTicksAtTheirTime runs the loop of
// schedule:work with every expression as an entry, over the 6 hours
// either side of each change of offset of 2026 and 2027 in six zones
// (of 2026 in three on PostgreSQL and in -short runs): wake at
// Next, RunDue, sleep until the next Next. Each entry's ticks are then
// the reference's, each dispatched at its own instant: Next names each
// tick RunDue dispatches, and none is skipped or doubled. (Work also
// wakes each minute, for clock steps; the loop here goes straight to the
// next tick.)
func TestRunDueDispatchesTheReferencesTicksAtTheirTime(t *testing.T) {
	t.Parallel()
	specs := runDueSpecs()
	eachDB(t, func(t *testing.T, database fx.Option) {
		ctx := context.Background()
		zones := testZones
		from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
		if strings.HasSuffix(t.Name(), "postgres") || testing.Short() { // each claim waits for the disk: the zones of odd shifts, in 2026
			zones = oddShifts
			to = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		for _, zone := range zones {
			loc := loadZone(t, zone)
			a := newTestApp(t, database, from)
			for k, anchor := range transitions(loc, from, to) {
				lo, hi := anchor.Add(-6*time.Hour), anchor.Add(6*time.Hour)
				a.clock.Set(lo)
				s := a.schedulerNamed(t, fmt.Sprintf("a%d.e", k), zone, specs)
				got := make([][]time.Time, len(specs))
				for now := lo; !now.After(hi); now = s.Next(now) {
					a.clock.Set(now)
					done, err := s.RunDue(ctx)
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range done {
						if !d.Tick.Equal(now) && !now.Equal(lo) {
							t.Errorf("%s %s: tick %s dispatched at %s", zone, d.Entry, d.Tick, now)
						}
						var i int
						fmt.Sscanf(d.Entry[strings.Index(d.Entry, "e"):], "e%d", &i)
						got[i] = append(got[i], d.Tick)
					}
				}
				for i, spec := range specs {
					want := refTicks(refParse(spec), loc, lo.Add(-27*time.Hour), lo.Add(-grace+time.Second), hi.Add(time.Second))
					if diff := firstDifference(got[i], want); diff != "" {
						t.Errorf("%s %q around %s: %s", zone, spec, anchor.In(loc).Format(time.RFC3339), diff)
					}
				}
			}
		}
	})
}

// TestRunDueCatchesUpAsTheReferenceSays: passes at random times, up to
// three hours apart, around each change of offset of 2026 and 2027: each pass
// dispatches, for each entry, the latest of the reference's ticks since
// the last one claimed, if it is within the entry's catch-up window (90
// minutes here), and no other.
func TestRunDueCatchesUpAsTheReferenceSays(t *testing.T) {
	t.Parallel()
	specs := runDueSpecs()
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(25, 6))
	ctx := context.Background()
	zones := testZones
	if testing.Short() {
		zones, to = oddShifts, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	for _, zone := range zones {
		loc := loadZone(t, zone)
		for _, anchor := range transitions(loc, from, to) {
			lo, hi := anchor.Add(-26*time.Hour), anchor.Add(26*time.Hour)
			a := newTestApp(t, apptest.TempDatabase(), lo)
			s := a.scheduler(t, zone, specs, CatchUp(90*time.Minute))
			want := make([][]time.Time, len(specs))
			for i, spec := range specs {
				want[i] = refTicks(refParse(spec), loc, lo.Add(-27*time.Hour), lo.Add(-grace), hi.Add(3*time.Hour))
			}
			last := make([]time.Time, len(specs))
			for now := lo; now.Before(hi); now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Hour)))) {
				a.clock.Set(now)
				done, err := s.RunDue(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got := map[int]time.Time{}
				for _, d := range done {
					var i int
					fmt.Sscanf(d.Entry, "e%d", &i)
					got[i] = d.Tick
				}
				for i := range specs {
					after := now.Add(-90 * time.Minute)
					if now.Equal(lo) {
						after = lo.Add(-grace) // a new entry: nothing from before the scheduler started
					}
					if last[i].After(after) {
						after = last[i]
					}
					var expect time.Time
					for _, tick := range want[i] {
						if tick.After(after) && !tick.After(now) {
							expect = tick
						}
					}
					if !got[i].Equal(expect) {
						t.Errorf("%s %q at %s: dispatched %v, want %v", zone, specs[i], now.In(loc).Format(time.RFC3339), got[i], expect)
					}
					if !expect.IsZero() {
						last[i] = expect
					}
				}
			}
		}
	}
}

// TestNextNamesTheTickRunDueDispatches: at 03:00 to 03:29 EDT on the day
// New York springs forward, "30 2 * * *" has run as the clocks landed;
// Next and schedule:list say tomorrow 02:30, and RunDue dispatches no
// other tick today.
func TestNextNamesTheTickRunDueDispatches(t *testing.T) {
	t.Parallel()
	ny := loadZone(t, "America/New_York")
	a := newTestApp(t, apptest.TempDatabase(), time.Date(2026, 3, 8, 1, 0, 0, 0, ny))
	s := a.scheduler(t, "America/New_York", []string{"30 2 * * *"})
	ctx := context.Background()
	landing := time.Date(2026, 3, 8, 3, 0, 0, 0, ny)
	if next := s.Next(a.clock.Now()); !next.Equal(landing) {
		t.Fatalf("Next at 01:00 EST = %s, want %s", next.In(ny), landing)
	}
	for now := landing; now.Before(landing.Add(30 * time.Minute)); now = now.Add(7 * time.Minute) {
		a.clock.Set(now)
		done, err := s.RunDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now.Equal(landing) != (len(done) == 1) || len(done) == 1 && !done[0].Tick.Equal(landing) {
			t.Fatalf("RunDue at %s: %+v", now.In(ny).Format(time.Kitchen), done)
		}
		if next, want := s.Next(now), time.Date(2026, 3, 9, 2, 30, 0, 0, ny); !next.Equal(want) {
			t.Fatalf("Next at %s = %s, want %s", now.In(ny).Format(time.Kitchen), next.In(ny), want)
		}
	}
}

// TestAClockStepDoesNotSilenceTheSchedule: a scheduler whose clock ran an
// hour ahead, then came back, goes on at once with the ticks no one
// claimed, and dispatches none of those claimed ahead again; a new entry
// after a step back is not silent either.
func TestAClockStepDoesNotSilenceTheSchedule(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, database fx.Option) {
		ctx := context.Background()
		at := func(hhmm string) time.Time {
			t, _ := time.Parse("2006-01-02 15:04", "2026-12-03 "+hhmm)
			return t
		}
		a := newTestApp(t, database, at("09:59"))
		s := a.scheduler(t, "UTC", []string{"*/5 * * * *"})
		pass := func(hhmm string) string {
			a.clock.Set(at(hhmm))
			done, err := s.RunDue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ticks []string
			for _, d := range done {
				ticks = append(ticks, d.Tick.Format("15:04"))
			}
			return strings.Join(ticks, ",")
		}
		steps := []struct{ now, want string }{
			{"10:00", "10:00"},
			{"11:00", "11:00"}, // a step forward: the catch-up rule runs the latest missed tick
			{"11:05", "11:05"},
			{"10:05", "10:05"}, // back: the ticks no one claimed run at once
			{"10:10", "10:10"},
			{"10:58", "10:55"},
			{"11:00", ""}, // claimed while the clock was ahead: not again
			{"11:05", ""},
			{"11:10", "11:10"},
		}
		for _, step := range steps {
			if got := pass(step.now); got != step.want {
				t.Fatalf("at %s: dispatched %q, want %q", step.now, got, step.want)
			}
		}
		var n int
		if err := a.db.NewRaw("SELECT COUNT(*) FROM schedule_ticks WHERE name = 'e0'").Scan(ctx, &n); err != nil || n != 7 {
			t.Fatalf("%d claims, %v; want 7, one per tick dispatched", n, err)
		}

		// A scheduler started while the clock was an hour ahead, then set
		// back: its new entry runs from the clock's time, not the start's.
		b := newTestApp(t, database, at("13:00"))
		s = b.scheduler(t, "UTC", []string{"*/5 * * * *"})
		b.clock.Set(at("12:00"))
		if done, err := s.RunDue(ctx); err != nil || len(done) != 1 || !done[0].Tick.Equal(at("12:00")) {
			t.Fatalf("a new entry after the clock went back: %+v, %v", done, err)
		}
	})
}
