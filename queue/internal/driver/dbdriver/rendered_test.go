package dbdriver

import (
	"context"
	"fmt"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

// TestEveryStatementIsRenderedOnce: what a driver puts in its
// database's words it keeps, so a second and a third round of the same
// work (dispatches with every feature, reservations of every kind,
// completions, failures, retries, cancels, prunes, reads) render
// nothing new: no statement is rewritten at each call. The first round
// renders what it uses.
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
					func() error { _, err := drv.Throttles(ctx, "rendered", now); return err },
					func() error { _, err := drv.Throttles(ctx, "", 0); return err },
					func() error { return drv.PruneRates(ctx, now+100_000) },
					func() error { return drv.PruneGroups(ctx) },
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
			round(1)
			first := kept()
			if first == 0 {
				t.Fatal("the first round kept nothing it rendered")
			}
			round(2)
			round(3)
			if n := kept(); n != first {
				t.Errorf("kept %d renderings after the first round, %d after the third: a statement is rendered anew at a call", first, n)
			}
		})
	}
}
