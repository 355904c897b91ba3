package queue_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
)

// controlQueue is a queue on a fresh, migrated database, with the real
// clock and no logging, that runs the jobs of the flow-control
// benchmarks: test.contact_changed (debounced), and test.snooze_once,
// which snoozes for no time once, then succeeds.
func controlQueue(b *testing.B, drv queue.Driver, url string) *queue.Queue {
	d := dbtest.Open(b, url)
	if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}).Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: drv}, DB: d, Clock: app.SystemClock{}, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = q.Handle(noop[contactChanged](), noop[ExportContacts](),
			queue.NamedHandler("test.snooze_once", func(_ context.Context, _ json.RawMessage, jc queue.JobContext) error {
				if jc.Snoozes == 0 {
					return queue.Snooze(0)
				}
				return nil
			}))
	}
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// BenchmarkDebounce measures a dispatch of a debounced job (10 s, a
// minute at most): to one key, each replacing the job that waits, and to
// a new key each, each storing a job, on each driver.
func BenchmarkDebounce(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			q := controlQueue(b, bk.driver, bk.url(b))
			b.Run("one-key", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := q.Dispatch(context.Background(), contactChanged{ContactID: "42", Change: i}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "dispatches/s")
			})
			b.Run("new-keys", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := q.Dispatch(context.Background(), contactChanged{ContactID: strconv.Itoa(i)}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "dispatches/s")
			})
		})
	}
}

// BenchmarkSnooze works b.N jobs that each snooze once (for no time) and
// then succeed, with 100 handlers, on each driver: two attempts a job,
// one of them a snooze (compare BenchmarkWork's one attempt a job).
func BenchmarkSnooze(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			q := controlQueue(b, bk.driver, bk.url(b))
			envs := make([]queue.Envelope, b.N)
			for i := range envs {
				envs[i] = queue.Envelope{Name: "test.snooze_once", Payload: json.RawMessage(`{}`)}
			}
			if _, err := q.PushMany(context.Background(), envs...); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			stats, err := q.Work(context.Background(), queue.WorkOptions{Queues: []string{"default"}, Workers: 100, StopWhenEmpty: true})
			if err != nil || stats.Succeeded != b.N || stats.Snoozed != b.N {
				b.Fatalf("%+v, %v", stats, err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
