package dbdriver

import (
	"context"
	"fmt"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

// TestEveryStatementIsRenderedOnce: what a driver puts in its
// database's words it keeps, once for each text, so rounds of the same
// work (dispatches with every feature, reservations of every kind,
// completions, failures, retries, cancels, prunes, reads of every kind
// of job) keep a bounded set: after three rounds, which reach every
// branch (a job's lookup finds it held in one round, ran in another),
// three more render nothing new, where a statement built from a call's
// data would add one a call. (A statement rendered outside the dialect,
// with Render, is not kept and not seen here: Render is for what is
// rendered once as the program starts, or built for its count of rows;
// every other call site renders through the dialect.)
func TestEveryStatementIsRenderedOnce(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, b := openBase(t, name)
			ctx := context.Background()
			kept := b.d.Rendered
			round := func(r int) {
				t.Helper()
				var jobs []*driver.Job
				for i := range 6 {
					j := job(r*100 + i)
					j.Queue = "rendered"
					switch i % 3 {
					case 0:
						j.RateKey, j.Rate = "api", driver.Rate{Max: 100, PerMs: 1000}
					case 1:
						j.LimitKey, j.LimitMax = "one", 1
					case 2:
						j.FairKey, j.Priority = fmt.Sprintf("tenant-%d", i), 1
					}
					jobs = append(jobs, j)
				}
				if _, err := drv.InsertMany(ctx, nil, jobs, 1); err != nil {
					t.Fatal(err)
				}
				now := int64(r*10_000 + 5000)
				got, err := drv.Reserve(ctx, driver.Reservation{Queue: "rendered", Now: now, At: now, Limit: 10,
					Features: driver.FeaturePriority | driver.FeatureRate | driver.FeatureFair, Only: driver.NewNames([]string{"x"})})
				if err != nil || len(got) == 0 {
					t.Fatalf("round %d: reserved %d, %v", r, len(got), err)
				}
				if _, err := drv.Fail(ctx, got[0].ID, got[0].Attempts, driver.Failure{Error: "boom", At: now}); err != nil {
					t.Fatal(err)
				}
				done := make([]driver.Attempt, 0, len(got))
				for _, j := range got[1:] {
					done = append(done, driver.Attempt{ID: j.ID, Attempt: j.Attempts})
				}
				if _, err := drv.Complete(ctx, done, true); err != nil {
					t.Fatal(err)
				}
				if err := drv.Retry(ctx, got[0].ID, now); err != nil {
					t.Fatal(err)
				}
				for _, f := range []func() error{
					func() error { _, err := drv.Cancel(ctx, got[0].ID, now); return err },
					func() error { _, err := drv.Lookup(ctx, got[1].ID); return err },
					func() error { _, err := drv.Lookup(ctx, got[0].ID); return err },  // failed, cancelled
					func() error { _, err := drv.Lookup(ctx, jobs[1].ID); return err }, // held by its limit, or ran
					func() error {
						return drv.AddThroughput(ctx, []driver.Throughput{{Queue: "rendered", Minute: now / 60_000, Succeeded: 1}},
							[]driver.Timing{{Minute: now / 60_000, Queue: "rendered", Name: "x", Bucket: 1, Count: 1}}, 0)
					},
					func() error { _, err := drv.Timings(ctx, 0, "rendered", ""); return err },
					func() error { _, err := drv.Throughput(ctx, 0); return err },
					func() error { _, err := drv.Throttles(ctx, "rendered", now); return err },
					func() error { _, err := drv.Throttles(ctx, "", 0); return err },
					func() error { _, err := drv.Upkeep(ctx, driver.UpkeepRates, 0, now+100_000); return err },
					func() error { _, err := drv.Upkeep(ctx, driver.UpkeepPlaces, 0, 0); return err },
					func() error { _, err := drv.Features(ctx, "rendered", true); return err },
					func() error {
						_, err := drv.Behind(ctx, "rendered", now, now, 1, driver.NewNames([]string{"x"}))
						return err
					},
					func() error { _, err := drv.PruneSucceeded(ctx, now+100_000, 10); return err },
					func() error { _, err := drv.PruneFailed(ctx, now+100_000, 10); return err },
					func() error {
						_, err := drv.JobIDs(ctx, "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", 10)
						return err
					},
				} {
					if err := f(); err != nil {
						t.Fatalf("round %d: %v", r, err)
					}
				}
			}
			for r := 1; r <= 3; r++ {
				round(r)
			}
			first := kept()
			if first == 0 {
				t.Fatal("three rounds kept nothing they rendered")
			}
			for r := 4; r <= 6; r++ {
				round(r)
			}
			if n := kept(); n != first {
				t.Errorf("kept %d renderings after three rounds, %d after six: a statement is rendered anew from a call's data", first, n)
			}
		})
	}
}
