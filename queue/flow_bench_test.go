package queue_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// Tick is a no-op job on the queue "tick", for the benchmarks.
type Tick struct{}

func (Tick) JobName() string           { return "bench.tick" }
func (Tick) JobOptions() queue.Options { return queue.Options{Queue: "tick"} }

// ticks is n Ticks.
func ticks(n int) []queue.Job {
	jobs := make([]queue.Job, n)
	for i := range jobs {
		jobs[i] = Tick{}
	}
	return jobs
}

// BenchmarkTenThousandFinishing measures 10,000 no-op jobs finished by 4
// worker engines of 25 handlers each (4 completers, as 4 processes would
// have), dispatched as plain jobs or as one batch: the batch's jobs
// complete through Finish, each group of completions a transaction that
// updates the batch's one row of counts. On PostgreSQL it samples
// pg_locks every millisecond while the jobs run and reports the share of
// samples in which a lock was waited for (waits/sample) and the most
// waiters seen at once (max-waiters): the batch's row must not queue the
// engines behind it.
//
//	go test ./queue -run '^$' -bench TenThousand -benchtime 1x -count 5
func BenchmarkTenThousandFinishing(b *testing.B) {
	for _, backend := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", dbtest.SQLiteURL}, {"postgres", dbtest.PostgresURL}} {
		for _, mode := range []string{"plain", "batch"} {
			b.Run(backend.name+"/"+mode, func(b *testing.B) {
				f := newFixture(b, queue.Database, backend.url(b), queue.Config{Queues: []string{"tick"}}, map[string]queue.Registration{"bench.tick": noop[Tick]()})
				pg := f.db.Dialect() == db.Postgres
				var elapsed time.Duration
				var samples, waited, flowWaited, most int64
				for b.Loop() {
					b.StopTimer()
					if mode == "plain" {
						if _, err := f.q.DispatchMany(ctx, ticks(10_000)...); err != nil {
							b.Fatal(err)
						}
					} else if _, err := f.q.DispatchFlow(ctx, queue.Batch(ticks(10_000)...)); err != nil {
						b.Fatal(err)
					}
					stop := make(chan struct{})
					var sampler sync.WaitGroup
					if pg {
						sampler.Go(func() {
							for {
								select {
								case <-stop:
									return
								case <-time.After(time.Millisecond):
								}
								var n, onFlow int64
								if err := f.db.QueryRowContext(ctx, "SELECT count(*), count(*) FILTER (WHERE query LIKE '%UPDATE queue_flows%') "+
									"FROM pg_stat_activity WHERE wait_event_type = 'Lock'").Scan(&n, &onFlow); err != nil {
									continue
								}
								samples++
								if n > 0 {
									waited++
								}
								if onFlow > 0 {
									flowWaited++
								}
								most = max(most, n)
							}
						})
					}
					b.StartTimer()
					start := time.Now()
					var wg sync.WaitGroup
					var done atomic.Int64
					for range 4 {
						wg.Go(func() {
							s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"tick"}, Workers: 25, StopWhenEmpty: true})
							if err != nil {
								b.Error(err)
							}
							done.Add(int64(s.Succeeded))
						})
					}
					wg.Wait()
					elapsed += time.Since(start)
					b.StopTimer()
					close(stop)
					sampler.Wait()
					if done.Load() != 10_000 {
						b.Fatalf("%d of 10,000 jobs succeeded", done.Load())
					}
					if mode == "batch" {
						flows, _, err := f.q.Inspector().Flows(ctx, queue.FlowsQuery{Limit: 1})
						if err != nil || flows[0].State != "succeeded" || flows[0].Succeeded != 10_000 {
							b.Fatalf("the batch: %+v, %v", flows, err)
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.N)*10_000/elapsed.Seconds(), "jobs/s")
				if pg && samples > 0 {
					b.ReportMetric(float64(waited)/float64(samples), "waits/sample")
					b.ReportMetric(float64(flowWaited)/float64(samples), "flow-waits/sample")
					b.ReportMetric(float64(most), "max-waiters")
				}
			})
		}
	}
}
