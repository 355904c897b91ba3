package schedule_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/schedule"
	"github.com/navree/navree/testing/apptest"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
)

type Report struct{}

func (Report) JobName() string { return "reports.nightly" }

type Sync struct {
	Tick string `json:"tick"`
}

func (Sync) JobName() string           { return "crm.sync" }
func (Sync) JobOptions() queue.Options { return queue.Options{Queue: "sync"} }

var handlers = fx.Options(
	queue.HandleFunc(func(context.Context, Report, queue.JobContext) error { return nil }),
	queue.HandleFunc(func(context.Context, Sync, queue.JobContext) error { return nil }),
)

type entriesIn struct {
	fx.In
	Entries []schedule.Entry `group:"schedule.entries"`
}

type schedApp struct {
	*apptest.App
	S       *schedule.Scheduler
	Q       *queue.Queue
	DB      *db.DB
	Clock   *apptest.Clock
	entries []schedule.Entry
}

// newApp is an app with entries on database, its clock at start.
func newApp(t *testing.T, database fx.Option, start time.Time, entries ...fx.Option) *schedApp {
	t.Helper()
	a := &schedApp{Clock: apptest.FixedClock(start)}
	var in entriesIn
	a.App = apptest.New(t, append([]fx.Option{database, db.Module(), queue.Module(), schedule.Module(), handlers,
		app.WithClock(a.Clock), fx.Populate(&a.S, &a.Q, &a.DB, &in)}, entries...)...)
	a.entries = in.Entries
	return a
}

// another is a second scheduler on a's database and clock.
func (a *schedApp) another(t *testing.T) *schedule.Scheduler {
	t.Helper()
	s, err := schedule.New(schedule.Params{DB: a.DB, Dispatcher: a.Q, Clock: a.Clock, Entries: a.entries})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eachDatabase(t *testing.T, f func(t *testing.T, database fx.Option)) {
	t.Run("sqlite", func(t *testing.T) { f(t, apptest.TempDatabase()) })
	t.Run("postgres", func(t *testing.T) { f(t, apptest.Postgres()) })
}

func pending(t *testing.T, q *queue.Queue, queueName string) int {
	t.Helper()
	n, err := q.Inspector().PendingCount(context.Background(), queueName)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func at(hhmmss string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05", "2026-12-03 "+hhmmss)
	if err != nil {
		panic(err)
	}
	return t
}

var twoEntries = fx.Options(
	schedule.Cron("reports.nightly", "0 * * * *", Report{}),
	schedule.Every("crm.sync", 15*time.Minute, Sync{}),
)

func TestTwoSchedulersDispatchEachTickOnce(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, at("09:59:30"), twoEntries)
		b := a.another(t)
		a.Clock.Set(at("10:00:00"))
		var wg sync.WaitGroup
		results := make([][]schedule.Dispatched, 2)
		for i, s := range []*schedule.Scheduler{a.S, b} {
			wg.Go(func() {
				d, err := s.RunDue(context.Background())
				if err != nil {
					t.Error(err)
				}
				results[i] = d
			})
		}
		wg.Wait()
		if n := len(results[0]) + len(results[1]); n != 2 {
			t.Fatalf("the two schedulers dispatched %d ticks, want one per entry: %+v", n, results)
		}
		if pending(t, a.Q, "default") != 1 || pending(t, a.Q, "sync") != 1 {
			t.Fatalf("pending: %d default, %d sync; want one job per entry", pending(t, a.Q, "default"), pending(t, a.Q, "sync"))
		}
		// A scheduler that lags behind a tick whose job has finished
		// dispatches it no second time.
		if _, err := a.Q.RunPending(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Q.Work(context.Background(), queue.WorkOptions{Queues: []string{"sync"}, StopWhenEmpty: true}); err != nil {
			t.Fatal(err)
		}
		a.Clock.Set(at("10:00:40"))
		if d, err := b.RunDue(context.Background()); err != nil || len(d) != 0 {
			t.Fatalf("a lagging scheduler dispatched %+v (%v)", d, err)
		}
		if n := pending(t, a.Q, "default") + pending(t, a.Q, "sync"); n != 0 {
			t.Fatalf("%d jobs pending after the lagging scheduler", n)
		}
	})
}

func TestCatchUpRunsTheLatestMissedTickOnce(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, at("08:59:59"), schedule.Cron("reports.nightly", "0 * * * *", Report{}))
		a.Clock.Set(at("09:00:00"))
		if d, err := a.S.RunDue(context.Background()); err != nil || len(d) != 1 {
			t.Fatalf("at 09:00: %+v %v", d, err)
		}
		a.Clock.Set(at("12:30:00")) // every scheduler down from 09:00 to 12:30
		d, err := a.S.RunDue(context.Background())
		if err != nil || len(d) != 1 || !d[0].Tick.Equal(at("12:00:00")) {
			t.Fatalf("after the downtime: %+v %v; want the 12:00 tick alone", d, err)
		}
		if d, _ := a.S.RunDue(context.Background()); len(d) != 0 || pending(t, a.Q, "default") != 2 {
			t.Fatalf("a second pass dispatched %+v; %d pending", d, pending(t, a.Q, "default"))
		}
		// A new entry does not run the ticks from before the scheduler
		// started.
		b := newApp(t, database, at("14:10:00"), schedule.Cron("reports.daily", "0 3 * * *", Report{}))
		if d, _ := b.S.RunDue(context.Background()); len(d) != 0 {
			t.Fatalf("a new entry ran %+v", d)
		}
		// schedule:run from system cron starts just after its tick: a new
		// entry runs that tick.
		c := newApp(t, database, at("14:00:01"), schedule.Cron("reports.hourly", "0 * * * *", Report{}))
		if d, _ := c.S.RunDue(context.Background()); len(d) != 1 || !d[0].Tick.Equal(at("14:00:00")) {
			t.Fatalf("a scheduler started a second after a new entry's tick ran %+v", d)
		}
	})
}

func TestWithoutOverlappingSkipsWhileTheLastRunIsPending(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, at("09:59:59"), schedule.Every("crm.sync", 15*time.Minute, Sync{}, schedule.WithoutOverlapping()))
		ctx := context.Background()
		a.Clock.Set(at("10:00:00"))
		first, err := a.S.RunDue(ctx)
		if err != nil || len(first) != 1 || first[0].Skipped {
			t.Fatalf("10:00: %+v %v", first, err)
		}
		a.Clock.Set(at("10:15:00"))
		d, err := a.S.RunDue(ctx)
		if err != nil || len(d) != 1 || !d[0].Skipped || d[0].JobID != first[0].JobID || pending(t, a.Q, "sync") != 1 {
			t.Fatalf("10:15 with the 10:00 job pending: %+v %v", d, err)
		}
		out, err := a.RunCommand("schedule:list")
		if err != nil || !strings.Contains(out, "2026-12-03 10:15:00 UTC (skipped)") {
			t.Fatalf("schedule:list: %v\n%s", err, out)
		}
		if _, err := a.Q.Work(ctx, queue.WorkOptions{Queues: []string{"sync"}, StopWhenEmpty: true}); err != nil {
			t.Fatal(err)
		}
		a.Clock.Set(at("10:30:00"))
		if d, err := a.S.RunDue(ctx); err != nil || len(d) != 1 || d[0].Skipped || d[0].JobID == first[0].JobID {
			t.Fatalf("10:30 after the job ran: %+v %v", d, err)
		}
	})
}

func TestCommands(t *testing.T) {
	t.Parallel()
	a := newApp(t, apptest.TempDatabase(), at("09:59:00"), twoEntries,
		schedule.Cron("crm.digest", "30 7 * * 1-5", Report{}, schedule.In("Europe/Berlin"), schedule.Options(queue.Options{Queue: "mail"})))
	out, err := a.RunCommand("schedule:list")
	if err != nil {
		t.Fatal(err)
	}
	want := `NAME             SCHEDULE      ZONE           NEXT RUN                             LAST RUN  JOB              QUEUE
crm.digest       30 7 * * 1-5  Europe/Berlin  2026-12-04 07:30:00 CET (in 20h31m)  never     reports.nightly  mail
crm.sync         every 15m0s   -              2026-12-03 10:00:00 UTC (in 1m)      never     crm.sync         sync
reports.nightly  0 * * * *     UTC            2026-12-03 10:00:00 UTC (in 1m)      never     reports.nightly  (default)
`
	if out != want {
		t.Fatalf("schedule:list printed:\n%s\nwant:\n%s", out, want)
	}
	if out, err := a.RunCommand("schedule:run"); err != nil || out != "Nothing is due.\n" {
		t.Fatalf("schedule:run at 09:59: %q %v", out, err)
	}
	a.Clock.Set(at("10:00:00"))
	out, err = a.RunCommand("schedule:run")
	ids := regexp.MustCompile(`job [0-9a-f-]{36}`)
	if got := ids.ReplaceAllString(out, "job ID"); err != nil || got != "Dispatched crm.sync at 2026-12-03T10:00:00Z: job ID.\nDispatched reports.nightly at 2026-12-03T10:00:00Z: job ID.\n" {
		t.Fatalf("schedule:run at 10:00: %q %v", out, err)
	}
	a.Clock.Set(at("10:05:00"))
	out, err = a.RunCommand("schedule:run", "crm.digest")
	if got := ids.ReplaceAllString(out, "job ID"); err != nil || got != "Dispatched crm.digest at 2026-12-03T10:05:00Z: job ID.\n" {
		t.Fatalf("schedule:run crm.digest: %q %v", out, err)
	}
	if pending(t, a.Q, "mail") != 1 {
		t.Fatal("crm.digest's job is not on its queue")
	}
	if _, err := a.RunCommand("schedule:run", "crm.digst"); err == nil || err.Error() != `schedule: no entry "crm.digst"; there are crm.digest, crm.sync, reports.nightly` {
		t.Fatalf("an unknown entry: %v", err)
	}
}

// TestScheduleWorkStopsAtOnceWhenCancelled: schedule:work is listed among
// the workers while it runs, as a scheduler, and stops at once when
// cancelled, deleting its registration.
func TestScheduleWorkStopsAtOnceWhenCancelled(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	var in *queue.Inspector
	a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": "sqlite://" + t.TempDir() + "/app.db"}}),
		db.Module(), queue.Module(), schedule.Module(), handlers, schedule.Cron("reports.nightly", "0 3 * * *", Report{}), fx.Populate(&in))
	a.Stdout, a.Stderr = io.Discard, io.Discard
	if err := a.Run(context.Background(), []string{"migrate"}); err != nil {
		t.Fatal(err)
	}
	a.Stdout = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, []string{"schedule:work"}) }()
	lines := bufio.NewReader(r)
	if first, _ := lines.ReadString('\n'); first != "Scheduling 1 entry (Ctrl-C to stop)\n" {
		t.Fatalf("schedule:work printed %q", first)
	}
	if workers, err := in.Workers(ctx); err != nil || len(workers) != 1 || workers[0].Kind != queue.KindScheduler || workers[0].Queues != nil || workers[0].Gone {
		t.Fatalf("the workers while schedule:work runs: %+v, %v; want it, a scheduler", workers, err)
	}
	cancel() // mid-sleep: the next tick is hours away
	go func() { lines.ReadString('\n') }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("schedule:work did not stop when cancelled")
	}
	var out strings.Builder
	a.Stdout = &out
	if err := a.Run(context.Background(), []string{"queue:workers"}); err != nil || out.String() != "No worker is registered: start one with queue:work.\n" {
		t.Fatalf("queue:workers after schedule:work stopped: %q, %v; want none", out.String(), err)
	}
}

func TestBadEntriesFailTheBoot(t *testing.T) {
	t.Parallel()
	build := func(opts ...fx.Option) error {
		a := app.New(append([]fx.Option{config.Module(config.Sources{Overrides: map[string]any{"database.url": "sqlite://" + t.TempDir() + "/app.db"}}),
			db.Module(), queue.Module(), schedule.Module(), handlers, fx.Populate(new(*schedule.Scheduler))}, opts...)...)
		_, err := a.Build()
		return err
	}
	tests := []struct {
		entry fx.Option
		want  string
	}{
		{schedule.Cron("reports.nightly", "0 3 * *", Report{}), `the cron expression "0 3 * *" does not parse: it has 4 fields, where cron takes 5 (minute hour day-of-month month day-of-week), 6 with seconds first, or a descriptor such as @daily`},
		{schedule.Cron("reports.nightly", "61 * * * *", Report{}), `the cron expression "61 * * * *" does not parse: minute 61 is above 59 (minute takes 0-59)`},
		{schedule.Cron("reports.nightly", "0 22-2 * * *", Report{}), `the cron expression "0 22-2 * * *" does not parse: hour range 22-2 runs backwards: write 22-23,0-2`},
		{schedule.Cron("reports.nightly", "0 0 * * 5#2", Report{}), `the cron expression "0 0 * * 5#2" does not parse: day of week "5#2": "#" is not supported here; `},
		{schedule.Cron("reports.nightly", "0 0 31 2 *", Report{}), `the cron expression "0 0 31 2 *" never fires (such as the 31st of February)`},
		{schedule.Cron("reports.nightly", "0 3 * * *", Report{}, schedule.In("Europe/Berln")), `unknown time zone "Europe/Berln" (a name of the IANA database, such as Europe/Berlin)`},
		{schedule.Cron("Reports Nightly", "0 3 * * *", Report{}), `the name must be 1 to 100 of a-z, 0-9, '.', '_', ':' and '-'`},
		{schedule.Every("crm.sync", 1500*time.Millisecond, Sync{}), `Every needs whole seconds, 1s or more, not 1.5s`},
		{schedule.Cron("crm.sync", "@every 1h", Sync{}), `"@every 1h" counts from each scheduler's start: use schedule.Every`},
		{schedule.Cron("crm.sync", "TZ=Europe/Berlin 0 3 * * *", Sync{}), `names its zone in the expression: use the option schedule.In`},
		{fx.Options(schedule.Cron("reports.nightly", "0 3 * * *", Report{}), schedule.Every("reports.nightly", time.Hour, Report{})), `schedule: entry "reports.nightly" is registered twice: at `},
	}
	for _, tt := range tests {
		err := build(tt.entry)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "schedule_test.go:") {
			t.Errorf("boot error %v\nwant it to hold %q and name the entry's line", err, tt.want)
		}
	}
	err := build(fx.Replace(schedule.Config{Timezone: "Mars/Olympus"}))
	if err == nil || !strings.Contains(err.Error(), `invalid value for schedule.timezone: "Mars/Olympus"`) {
		t.Errorf("a bad [schedule] timezone: %v", err)
	}
}

func TestPruneKeepsEachEntrysLatestTick(t *testing.T) {
	t.Parallel()
	a := newApp(t, apptest.TempDatabase(), at("07:59:59"), schedule.Cron("reports.nightly", "0 * * * *", Report{}))
	ctx := context.Background()
	for _, hour := range []string{"08:00:00", "09:00:00", "10:00:00"} {
		a.Clock.Set(at(hour))
		if d, err := a.S.RunDue(ctx); err != nil || len(d) != 1 {
			t.Fatalf("%s: %+v %v", hour, d, err)
		}
	}
	if n, err := a.S.Prune(ctx, at("11:00:00")); err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want the 08:00 and 09:00 ticks deleted", n, err)
	}
	a.Clock.Set(at("10:30:00")) // the latest tick kept: 10:00 is not run again
	if d, _ := a.S.RunDue(ctx); len(d) != 0 {
		t.Fatalf("after Prune: %+v", d)
	}
}

// TestPruneDeletesInBatches: more claims than a batch go, a batch to a
// transaction, each entry's latest kept.
func TestPruneDeletesInBatches(t *testing.T) {
	t.Parallel()
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, at("07:59:59"))
		ctx := context.Background()
		err := a.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { // one commit, not 2000
			for _, name := range []string{"a", "b"} {
				for n := range schedule.PruneBatch {
					if _, err := tx.ExecContext(ctx, "INSERT INTO schedule_ticks (name, tick_at, job_id, skipped, dispatched_at) VALUES (?, ?, 'j', 0, 1)", name, n+1); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := a.S.Prune(ctx, at("07:00:00")); err != nil || n != 2*(schedule.PruneBatch-1) {
			t.Fatalf("Prune = %d, %v; want every claim but each entry's latest", n, err)
		}
		var left int
		if err := a.DB.QueryRowContext(ctx, "SELECT count(*) FROM schedule_ticks WHERE tick_at = ?", schedule.PruneBatch).Scan(&left); err != nil || left != 2 {
			t.Fatalf("%d latest claims left, %v; want 2", left, err)
		}
		if out, err := a.App.RunCommand("schedule:prune"); err != nil || out != "Deleted 0 claim(s) of ticks older than 168h0m0s.\n" {
			t.Fatalf("schedule:prune: %q, %v", out, err)
		}
		if _, err := a.App.RunCommand("schedule:prune", "--older-than", "0s"); err == nil || err.Error() != "schedule:prune: --older-than is 0s; want more than 0, such as 168h" {
			t.Fatalf("schedule:prune --older-than 0s: %v", err)
		}
	})
}

// TestWithoutFx: entries made with CronEntry, CronFuncEntry, EveryEntry
// and EveryFuncEntry, which take what Cron, CronFunc, Every and EveryFunc
// take, given to New; a func entry's nil job skips the tick.
func TestWithoutFx(t *testing.T) {
	t.Parallel()
	a := newApp(t, apptest.TempDatabase(), at("09:59:59"))
	s, err := schedule.New(schedule.Params{DB: a.DB, Dispatcher: a.Q, Clock: a.Clock, Entries: []schedule.Entry{
		schedule.EveryEntry("crm.sync", 15*time.Minute, Sync{}),
		schedule.EveryFuncEntry("crm.sync_on_the_hour", 15*time.Minute, func(tick time.Time) queue.Job {
			if tick.Minute() != 0 {
				return nil
			}
			return Sync{}
		}),
		schedule.CronEntry("reports.hourly", "0 * * * *", Report{}),
		schedule.CronFuncEntry("reports.nightly", "0 * * * *", func(tick time.Time) queue.Job { return Report{} }),
		schedule.CronFuncEntry("reports.never", "0 * * * *", func(tick time.Time) queue.Job { return nil }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	a.Clock.Set(at("10:00:00"))
	d, err := s.RunDue(context.Background())
	if err != nil || len(d) != 5 {
		t.Fatalf("RunDue = %+v, %v; want the five entries", d, err)
	}
	for _, e := range d {
		if skip := e.Entry == "reports.never"; e.Skipped != skip || (e.JobID == "") != skip {
			t.Errorf("%s: skipped %v, job %q", e.Entry, e.Skipped, e.JobID)
		}
	}
	_, err = schedule.New(schedule.Params{DB: a.DB, Dispatcher: a.Q, Entries: []schedule.Entry{schedule.CronEntry("x", "bad", nil)}})
	if err == nil || !strings.Contains(err.Error(), `schedule: entry "x" at `) || !strings.Contains(err.Error(), "schedule_test.go:") {
		t.Fatalf("a bad entry without fx: %v", err)
	}
}

// TestModuleWithTakesItsConfigInCode: schedule.ModuleWith's Config is the
// [schedule] section written in code: its time zone reads the entries'
// cron expressions, a zero Config is UTC, and a zone that does not exist
// fails the boot as the section's does.
func TestModuleWithTakesItsConfigInCode(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		cfg  schedule.Config
		want time.Time
	}{
		{schedule.Config{Timezone: "Europe/Berlin"}, time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)}, // 03:00 CET
		{schedule.Config{}, time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)},
	} {
		var s *schedule.Scheduler
		apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), schedule.ModuleWith(tt.cfg), handlers,
			schedule.Cron("reports.nightly", "0 3 * * *", Report{}), fx.Populate(&s))
		if got := s.Next(from); !got.Equal(tt.want) {
			t.Errorf("ModuleWith(%+v): the next tick of 0 3 * * * after %s is %s, want %s", tt.cfg, from, got.UTC(), tt.want)
		}
	}
	a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": "sqlite://" + t.TempDir() + "/app.db"}}),
		db.Module(), queue.Module(), schedule.ModuleWith(schedule.Config{Timezone: "Europe/Berln"}), handlers)
	a.Stdout, a.Stderr = io.Discard, io.Discard
	if err := a.Run(context.Background(), []string{"schedule:list"}); err == nil || !strings.Contains(err.Error(), `"Europe/Berln"`) {
		t.Fatalf("ModuleWith with an unknown zone: %v", err)
	}
}

// TestEveryFuncBuildsTheJobOfEachTick: EveryFunc is Every with the job
// made of the tick's time.
func TestEveryFuncBuildsTheJobOfEachTick(t *testing.T) {
	t.Parallel()
	var ticks []time.Time
	a := newApp(t, apptest.TempDatabase(), at("09:59:59"), schedule.EveryFunc("crm.sync", 15*time.Minute, func(tick time.Time) queue.Job {
		ticks = append(ticks, tick)
		return Sync{}
	}))
	a.Clock.Set(at("10:00:00"))
	if d, err := a.S.RunDue(context.Background()); err != nil || len(d) != 1 || d[0].Entry != "crm.sync" {
		t.Fatalf("RunDue = %+v, %v", d, err)
	}
	if len(ticks) != 1 || !ticks[0].Equal(at("10:00:00")) {
		t.Fatalf("the job was made for the ticks %v, want 10:00", ticks)
	}
}

// TestScheduleWorkExitsAtARestart: queue:restart asks a running
// schedule:work, which learns it at its next heartbeat (a second, with a
// rescue time of 3 s), says so and exits 0, deleting its registration;
// one started after the request keeps running.
func TestScheduleWorkExitsAtARestart(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) string{"sqlite": dbtest.SQLiteURL, "postgres": dbtest.PostgresURL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := open(t)
			a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url, "queue.rescue_after": "3s"}}),
				db.Module(), queue.Module(), schedule.Module(), handlers, schedule.Cron("reports.nightly", "0 3 * * *", Report{}))
			a.Stdout, a.Stderr = io.Discard, io.Discard
			if err := a.Run(context.Background(), []string{"migrate"}); err != nil {
				t.Fatal(err)
			}
			start := func(ctx context.Context) (*bufio.Reader, chan error) {
				r, w := io.Pipe()
				b := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url, "queue.rescue_after": "3s"}}),
					db.Module(), queue.Module(), schedule.Module(), handlers, schedule.Cron("reports.nightly", "0 3 * * *", Report{}))
				b.Stdout, b.Stderr = w, io.Discard
				done := make(chan error, 1)
				go func() { done <- b.Run(ctx, []string{"schedule:work"}); w.Close() }()
				lines := bufio.NewReader(r)
				if first, _ := lines.ReadString('\n'); first != "Scheduling 1 entry (Ctrl-C to stop)\n" {
					t.Fatalf("schedule:work printed %q", first)
				}
				return lines, done
			}
			oldOut, oldDone := start(context.Background())
			var out strings.Builder
			a.Stdout = &out
			if err := a.Run(context.Background(), []string{"queue:restart"}); err != nil ||
				!regexp.MustCompile(`^Asked 1 schedule:work on \S+ to restart: each exits once its running jobs end; workers started from now on keep running\.\n$`).MatchString(out.String()) {
				t.Fatalf("queue:restart printed %q, %v", out.String(), err)
			}
			newCtx, stopNew := context.WithCancel(context.Background())
			defer stopNew()
			newOut, newDone := start(newCtx)
			go io.Copy(io.Discard, newOut)
			if rest, _ := io.ReadAll(oldOut); string(rest) != "Stopped scheduling: a restart was requested (queue:restart).\n" {
				t.Fatalf("the old schedule:work printed %q", rest)
			}
			if err := <-oldDone; err != nil {
				t.Fatalf("the old schedule:work ended with %v; want it to exit 0", err)
			}
			out.Reset()
			var workers []struct {
				Kind      string  `json:"kind"`
				RestartAt *string `json:"restart_at"`
			}
			if err := a.Run(context.Background(), []string{"queue:workers", "--json"}); err != nil || json.Unmarshal([]byte(out.String()), &workers) != nil ||
				len(workers) != 1 || workers[0].Kind != queue.KindScheduler || workers[0].RestartAt != nil {
				t.Fatalf("the workers after the restart: %s (%v); want the new schedule:work alone, not asked", out.String(), err)
			}
			select {
			case err := <-newDone:
				t.Fatalf("the schedule:work started after the request ended: %v", err)
			default:
			}
			stopNew()
			if err := <-newDone; err != nil {
				t.Fatal(err)
			}
		})
	}
}
