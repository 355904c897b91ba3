package dbdriver

import (
	"context"
	"fmt"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

// BenchmarkComplete measures a completion of a batch of 25 reserved jobs,
// with the successes kept (queue.keep_succeeded) and without: go test
// ./queue/internal/driver/dbdriver -run '^$' -bench Complete. Each op
// is one job; the dispatch and the reservation are outside the timer.
func BenchmarkComplete(b *testing.B) {
	const batch = 25
	for _, name := range []string{"sqlite", "postgres"} {
		for _, keep := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/keep=%t", name, keep), func(b *testing.B) {
				drv, _ := openDriver(b, name)
				ctx := context.Background()
				n := 0
				for b.Loop() {
					if n%batch == 0 {
						b.StopTimer()
						jobs := make([]*driver.Job, batch)
						for i := range jobs {
							jobs[i] = job(n + i)
							jobs[i].Payload = []byte(`{"account_id":1234,"note":"a payload of a usual size"}`)
						}
						if _, err := drv.InsertMany(ctx, nil, jobs, batch); err != nil {
							b.Fatal(err)
						}
						got, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 2000, At: 2000, Limit: batch})
						if err != nil || len(got) != batch {
							b.Fatal(len(got), err)
						}
						done := make([]driver.Attempt, batch)
						for i, j := range got {
							done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts, At: 3000, Ms: 1, Wait: 1}
						}
						b.StartTimer()
						if ids, err := drv.Complete(ctx, done, keep); err != nil || len(ids) != batch {
							b.Fatal(len(ids), err)
						}
					}
					n++
				}
			})
		}
	}
}

// BenchmarkCompleteLimited measures a completion of a batch of 25
// reserved jobs, each of its own concurrency key (of limit 1) with a job
// held behind it, which the completion lets in: go test
// ./queue/internal/driver/dbdriver -run '^$' -bench CompleteLimited. Each
// op is one job; the dispatch and the reservation are outside the timer.
func BenchmarkCompleteLimited(b *testing.B) {
	const batch = 25
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			drv, _ := openDriver(b, name)
			ctx := context.Background()
			limited := func(n int) []*driver.Job {
				jobs := make([]*driver.Job, batch)
				for i := range jobs {
					jobs[i] = job(n + i)
					jobs[i].LimitKey, jobs[i].LimitMax = fmt.Sprintf("account:%d", i), 1
				}
				return jobs
			}
			if _, err := drv.InsertMany(ctx, nil, limited(1_000_000), batch); err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				if n%batch == 0 {
					b.StopTimer()
					if _, err := drv.InsertMany(ctx, nil, limited(n), batch); err != nil { // held behind the keys' jobs
						b.Fatal(err)
					}
					got, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 1 << 50, At: 2000, Limit: batch})
					if err != nil || len(got) != batch {
						b.Fatal(len(got), err)
					}
					done := make([]driver.Attempt, batch)
					for i, j := range got {
						done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts, At: 3000, Ms: 1, Wait: 1, Limit: j.LimitKey}
					}
					b.StartTimer()
					if ids, err := drv.Complete(ctx, done, false); err != nil || len(ids) != batch {
						b.Fatal(len(ids), err)
					}
				}
				n++
			}
		})
	}
}
