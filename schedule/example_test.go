package schedule_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/schedule"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// NightlyReport mails the day's figures to the sales team.
type NightlyReport struct{}

func (NightlyReport) JobName() string { return "reports.nightly" }

// SyncContacts pulls the contacts changed at the mail provider.
type SyncContacts struct{}

func (SyncContacts) JobName() string { return "contacts.sync" }
func (SyncContacts) JobOptions() queue.Options {
	return queue.Options{Queue: "sync", Timeout: 10 * time.Minute}
}

// DailyDigest mails the digest of one day.
type DailyDigest struct {
	Day string `json:"day"`
}

func (DailyDigest) JobName() string { return "crm.daily_digest" }

// reportsModule is a module of the app: its jobs, their handlers and
// their schedule, as docs/scheduling.md shows it.
var reportsModule = fx.Module("reports",
	queue.HandleFunc(func(ctx context.Context, job NightlyReport, jc queue.JobContext) error {
		fmt.Println("sending the nightly report")
		return nil
	}),
	queue.HandleFunc(func(ctx context.Context, job SyncContacts, jc queue.JobContext) error {
		fmt.Println("syncing contacts")
		return nil
	}),
	schedule.Cron("reports.nightly", "0 3 * * *", NightlyReport{}, schedule.In("Europe/Berlin")),
	schedule.Every("contacts.sync", 15*time.Minute, SyncContacts{}, schedule.WithoutOverlapping()),
)

// exampleEntries reads the entries the app's modules registered.
type exampleEntries struct {
	fx.In
	Entries []schedule.Entry `group:"schedule.entries"`
}

// exampleCRM is an app on a fresh SQLite file, migrated, built and
// started, with its clock: what apptest.New gives a test.
type exampleCRM struct {
	app     *app.App
	graph   *app.Graph
	S       *schedule.Scheduler
	Q       *queue.Queue
	DB      *db.DB
	Entries []schedule.Entry
	dir     string
}

func newExampleCRM(clock app.Clock, modules ...fx.Option) *exampleCRM {
	dir, err := os.MkdirTemp("", "schedule-example-")
	if err != nil {
		panic(err)
	}
	c := &exampleCRM{dir: dir}
	c.app = app.New(append([]fx.Option{
		config.Module(config.Sources{Overrides: map[string]any{"database.url": "sqlite://" + filepath.Join(dir, "crm.db")}}),
		db.Module(), queue.Module(), schedule.Module(), app.WithClock(clock),
	}, modules...)...)
	c.app.Name, c.app.Stdout, c.app.Stderr = "crm", io.Discard, io.Discard
	ctx := context.Background()
	if err := c.app.Run(ctx, []string{"migrate"}); err != nil {
		panic(err)
	}
	c.graph, err = c.app.Build(fx.Populate(&c.S, &c.Q, &c.DB), fx.Invoke(func(in exampleEntries) { c.Entries = in.Entries }))
	if err != nil {
		panic(err)
	}
	if err := c.graph.Start(ctx); err != nil {
		panic(err)
	}
	c.app.Stdout = os.Stdout
	return c
}

// run runs a command of the app, printing to stdout.
func (c *exampleCRM) run(args ...string) {
	if err := c.graph.Run(context.Background(), args); err != nil {
		fmt.Println(err)
	}
}

func (c *exampleCRM) stop() {
	_ = c.graph.Stop(context.Background())
	_ = os.RemoveAll(c.dir)
}

func printDispatched(done []schedule.Dispatched, err error) {
	if err != nil {
		fmt.Println(err)
	}
	if len(done) == 0 {
		fmt.Println("nothing dispatched")
	}
	for _, d := range done {
		skipped := ""
		if d.Skipped {
			skipped = " (skipped)"
		}
		fmt.Printf("dispatched %s at %s%s\n", d.Entry, d.Tick.UTC().Format(time.RFC3339), skipped)
	}
}

// A nightly report and a 15-minute sync: schedule:list shows them, and at
// 03:00 in Berlin the scheduler dispatches both ticks, which a worker
// runs.
func Example() {
	ctx := context.Background()
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC))
	crm := newExampleCRM(clock, reportsModule)
	defer crm.stop()

	crm.run("schedule:list")

	clock.Set(time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)) // 03:00 in Berlin
	printDispatched(crm.S.RunDue(ctx))
	printDispatched(crm.S.RunDue(ctx)) // each tick is dispatched once

	if _, err := crm.Q.Work(ctx, queue.WorkOptions{Queues: []string{"default", "sync"}, Workers: 1, StopWhenEmpty: true}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// NAME             SCHEDULE     ZONE           NEXT RUN                             LAST RUN  JOB              QUEUE
	// contacts.sync    every 15m0s  -              2026-12-03 14:15:00 UTC (in 15m)     never     contacts.sync    sync
	// reports.nightly  0 3 * * *    Europe/Berlin  2026-12-04 03:00:00 CET (in 12h00m)  never     reports.nightly  (default)
	// dispatched contacts.sync at 2026-12-04T02:00:00Z
	// dispatched reports.nightly at 2026-12-04T02:00:00Z
	// nothing dispatched
	// sending the nightly report
	// syncing contacts
}

// Two schedulers on one database dispatch each tick once; after a
// downtime, only the latest missed tick runs.
func ExampleScheduler_RunDue() {
	ctx := context.Background()
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 9, 59, 0, 0, time.UTC))
	crm := newExampleCRM(clock, reportsModule)
	defer crm.stop()
	// A second scheduler, as another schedule:work process would be.
	other, err := schedule.New(schedule.Params{DB: crm.DB, Dispatcher: crm.Q, Clock: clock, Entries: crm.Entries})
	if err != nil {
		panic(err)
	}

	clock.Set(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	printDispatched(crm.S.RunDue(ctx))
	printDispatched(other.RunDue(ctx))
	if _, err := crm.Q.Work(ctx, queue.WorkOptions{Queues: []string{"sync"}, Workers: 1, StopWhenEmpty: true}); err != nil {
		fmt.Println(err)
	}

	// Every scheduler down from 10:05 to 13:07: the ticks of 10:15 to
	// 12:45 are not run, 13:00 is.
	clock.Set(time.Date(2026, 12, 3, 13, 7, 0, 0, time.UTC))
	printDispatched(other.RunDue(ctx))
	// Output:
	// dispatched contacts.sync at 2026-12-03T10:00:00Z
	// nothing dispatched
	// syncing contacts
	// dispatched contacts.sync at 2026-12-03T13:00:00Z
}

// CronFunc builds each tick's job from the tick: here the day in the
// payload, and no job on a holiday, which skips the tick.
func ExampleCronFunc() {
	holidays := map[string]bool{"2026-12-25": true}
	ctx := context.Background()
	clock := apptest.FixedClock(time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC))
	crm := newExampleCRM(clock,
		queue.HandleFunc(func(ctx context.Context, job DailyDigest, jc queue.JobContext) error {
			fmt.Println("mailing the digest of", job.Day)
			return nil
		}),
		schedule.CronFunc("crm.daily_digest", "0 7 * * 1-5", func(tick time.Time) queue.Job {
			day := tick.Format(time.DateOnly) // a cron entry's tick is in its zone
			if holidays[day] {
				return nil // no job: the tick is recorded as skipped
			}
			return DailyDigest{Day: day}
		}, schedule.In("Europe/Berlin")))
	defer crm.stop()

	clock.Set(time.Date(2026, 12, 25, 6, 0, 0, 0, time.UTC)) // Friday the 25th, 07:00 in Berlin
	crm.run("schedule:run")
	clock.Set(time.Date(2026, 12, 28, 6, 0, 0, 0, time.UTC)) // Monday
	printDispatched(crm.S.RunDue(ctx))
	if _, err := crm.Q.RunPending(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Skipped crm.daily_digest at 2026-12-25T06:00:00Z: its function gave no job.
	// dispatched crm.daily_digest at 2026-12-28T06:00:00Z
	// mailing the digest of 2026-12-28
}

// Cron reads five fields, or six with seconds first, or a descriptor; a
// day matching either day field runs. Options set the zone, the jobs'
// queue and the catch-up window.
func ExampleCron() {
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)) // a Thursday
	crm := newExampleCRM(clock,
		queue.HandleFunc(func(context.Context, NightlyReport, queue.JobContext) error { return nil }),
		schedule.Cron("reports.nightly", "0 3 * * *", NightlyReport{}),
		schedule.Cron("reports.morning", "30 0 8 * * 1-5", NightlyReport{}, schedule.In("America/New_York")),
		schedule.Cron("reports.monthly", "@monthly", NightlyReport{}, schedule.Options(queue.Options{Queue: "reports"})),
		schedule.Cron("reports.friday_or_13th", "0 9 13 * 5", NightlyReport{}, schedule.CatchUp(time.Hour)),
	)
	defer crm.stop()
	crm.run("schedule:list")
	// Output:
	// NAME                    SCHEDULE        ZONE              NEXT RUN                             LAST RUN  JOB              QUEUE
	// reports.friday_or_13th  0 9 13 * 5      UTC               2026-12-04 09:00:00 UTC (in 23h00m)  never     reports.nightly  (default)
	// reports.monthly         @monthly        UTC               2027-01-01 00:00:00 UTC (in 28d)     never     reports.nightly  reports
	// reports.morning         30 0 8 * * 1-5  America/New_York  2026-12-03 08:00:30 EST (in 3h00m)   never     reports.nightly  (default)
	// reports.nightly         0 3 * * *       UTC               2026-12-04 03:00:00 UTC (in 17h00m)  never     reports.nightly  (default)
}

// Every ticks at multiples of its interval since the Unix epoch, the same
// on every scheduler: every 15 minutes at :00, :15, :30 and :45 UTC, every
// 7 minutes at 10:02, 10:09… (7 minutes does not divide an hour).
func ExampleEvery() {
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	crm := newExampleCRM(clock,
		queue.HandleFunc(func(context.Context, SyncContacts, queue.JobContext) error { return nil }),
		schedule.Every("contacts.sync", 15*time.Minute, SyncContacts{}),
		schedule.Every("contacts.sync_odd", 7*time.Minute, SyncContacts{}),
	)
	defer crm.stop()
	clock.Set(time.Date(2026, 12, 3, 10, 0, 1, 0, time.UTC))
	crm.run("schedule:list")
	// Output:
	// NAME               SCHEDULE     ZONE  NEXT RUN                          LAST RUN  JOB            QUEUE
	// contacts.sync      every 15m0s  -     2026-12-03 10:15:00 UTC (in 14m)  never     contacts.sync  sync
	// contacts.sync_odd  every 7m0s   -     2026-12-03 10:02:00 UTC (in 1m)   never     contacts.sync  sync
}

// Options is laid over the job's own JobOptions: the fields it sets win,
// the others keep the job's.
func ExampleOptions() {
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 9, 59, 0, 0, time.UTC))
	crm := newExampleCRM(clock,
		queue.HandleFunc(func(context.Context, SyncContacts, queue.JobContext) error { return nil }),
		schedule.Every("contacts.sync", 15*time.Minute, SyncContacts{}, schedule.Options(queue.Options{MaxAttempts: 1})))
	defer crm.stop()
	// A scheduler on the queue fake, to read the options of what it dispatches.
	fake := queuetest.NewFake()
	s, err := schedule.New(schedule.Params{DB: crm.DB, Dispatcher: fake.Dispatcher(), Clock: clock, Entries: crm.Entries})
	if err != nil {
		panic(err)
	}
	clock.Set(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	if _, err := s.RunDue(context.Background()); err != nil {
		panic(err)
	}
	for _, e := range fake.Envelopes() {
		fmt.Printf("%s queue=%s attempts=%d timeout=%s\n", e.Name, e.Options.Queue, e.Options.MaxAttempts, e.Options.Timeout)
	}
	// Output:
	// contacts.sync queue=sync attempts=1 timeout=10m0s
}

// TestDocsTesting is the test docs/scheduling.md shows under "Testing":
// an app with a fixed clock, moved to the tick.
func TestDocsTesting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var s *schedule.Scheduler
	var q *queue.Queue
	clock := apptest.FixedClock(time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC))
	a := apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), schedule.Module(), reportsModule,
		app.WithClock(clock), fx.Populate(&s, &q))

	clock.Set(time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)) // 03:00 in Berlin
	done, err := s.RunDue(ctx)
	if err != nil || len(done) != 2 || done[1].Entry != "reports.nightly" {
		t.Fatalf("RunDue: %+v, %v", done, err)
	}
	stats, err := q.RunPending(ctx) // the worker queues: the report, not the sync
	if err != nil || stats.Succeeded != 1 {
		t.Fatalf("%+v, %v", stats, err)
	}

	// The 02:00 sync job still waits on its queue: WithoutOverlapping skips 02:15.
	clock.Advance(15 * time.Minute)
	out, err := a.RunCommand("schedule:run")
	if err != nil || !strings.HasPrefix(out, "Skipped contacts.sync at 2026-12-04T02:15:00Z: its last job ") {
		t.Fatalf("schedule:run: %q, %v", out, err)
	}
}
