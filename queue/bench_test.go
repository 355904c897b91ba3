package queue_test

import (
	"context"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
)

// BenchmarkDispatch measures Dispatch of a small job on each driver, one
// goroutine and in parallel (GOMAXPROCS goroutines; -cpu sets how many).
// Each database run is one INSERT per job, committed on its own.
func BenchmarkDispatch(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			q := benchQueue(b, bk.driver, bk.url(b))
			job := ExportContacts{CompanyID: "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", RequestedBy: "ada@example.com"}
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := q.Dispatch(context.Background(), job); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(4) // 4 × GOMAXPROCS goroutines, as a web server's requests would
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := q.Dispatch(context.Background(), job); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			})
		})
	}
}

// BenchmarkWork measures Work over b.N queued no-op jobs with 100
// handlers, on each driver (see queue:bench for the full picture).
func BenchmarkWork(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			benchWork(b, benchQueue(b, bk.driver, bk.url(b)))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// benchQueue is a queue on a fresh, migrated database, with the real
// clock and no logging.
func benchQueue(b *testing.B, drv queue.Driver, url string) *queue.Queue {
	q, _ := benchQueueOn(b, drv, url)
	return q
}

// BenchmarkDispatchInAUnitOfWork measures a unit of work that dispatches
// one job and commits, as a request that queues a job does. On
// PostgreSQL that dispatch also learns the transaction's id, so that a
// COMMIT whose answer is lost can be resolved.
func BenchmarkDispatchInAUnitOfWork(b *testing.B) {
	for _, bk := range backends[1:] {
		b.Run(bk.name, func(b *testing.B) {
			q, d := benchQueueOn(b, bk.driver, bk.url(b))
			job := ExportContacts{CompanyID: "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", RequestedBy: "ada@example.com"}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Transaction(context.Background(), func(ctx context.Context) error {
					_, err := q.Dispatch(ctx, job)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "units/s")
		})
	}
}

func benchQueueOn(b *testing.B, drv queue.Driver, url string) (*queue.Queue, *db.DB) {
	d := dbtest.Open(b, url)
	if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}).Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: drv}, DB: d, Clock: app.SystemClock{},
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = q.Handle(noop[ExportContacts]())
	}
	if err != nil {
		b.Fatal(err)
	}
	return q, d
}

// BenchmarkMetrics dispatches and works on the memory queue without a
// meter provider (off) and with an OpenTelemetry SDK one whose manual
// reader is never collected (on): what recording the metrics costs a
// dispatch and an attempt.
func BenchmarkMetrics(b *testing.B) {
	for _, mode := range []struct {
		name     string
		provider metric.MeterProvider
	}{{"off", nil}, {"on", sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))}} {
		newQueue := func(b *testing.B) *queue.Queue {
			q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}, Clock: app.SystemClock{}, Logger: slog.New(slog.DiscardHandler),
				MeterProvider: mode.provider})
			if err == nil {
				err = q.Handle(noop[ExportContacts]())
			}
			if err != nil {
				b.Fatal(err)
			}
			return q
		}
		b.Run(mode.name+"/dispatch", func(b *testing.B) {
			q := newQueue(b)
			job := ExportContacts{CompanyID: "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", RequestedBy: "ada@example.com"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := q.Dispatch(context.Background(), job); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode.name+"/work", func(b *testing.B) { benchWork(b, newQueue(b)) })
	}
}

// benchWork queues b.N no-op jobs on q and times Work over them with 100
// handlers.
func benchWork(b *testing.B, q *queue.Queue) {
	jobs := make([]queue.Job, b.N)
	for i := range jobs {
		jobs[i] = ExportContacts{CompanyID: "c"}
	}
	if _, err := q.DispatchMany(context.Background(), jobs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	stats, err := q.Work(context.Background(), queue.WorkOptions{Queues: []string{"default"}, Workers: 100, StopWhenEmpty: true})
	if err != nil || stats.Succeeded != b.N {
		b.Fatalf("%+v, %v", stats, err)
	}
}
