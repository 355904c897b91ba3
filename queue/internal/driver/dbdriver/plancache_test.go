package dbdriver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// TestPostgreSQLKeepsOnePlanOfAReservation: with 40,000 jobs waiting, on
// one connection, 30 reservations of 4 of each shape and 30 of 64 by due
// time (its LIMIT a parameter, above plan.MaxSize): PostgreSQL plans
// each statement five times (plan_cache_mode auto tries custom plans
// first) and then runs the plan it keeps. It does in both states a busy
// table is found in: its statistics analyzed with a backlog (as
// autovacuum leaves them), where before the arguments were subqueries
// (see plan.Render) the large reservation was planned anew at every
// execution; and as a vacuum of the emptied table leaves them, the
// backlog since unanalyzed.
func TestPostgreSQLKeepsOnePlanOfAReservation(t *testing.T) {
	const size, large = 4, 64 // a small reservation's size, and a large one's limit (a parameter)
	for _, state := range []struct{ name, before, after string }{
		{"analyzed", "", "VACUUM ANALYZE jobs"},
		{"vacuumed empty", "VACUUM jobs", ""},
	} {
		t.Run(state.name, func(t *testing.T) {
			d := migrated(t, dbtest.MigratedPostgresURL(t, queueSets...))
			if d.Pooled() {
				t.Skip("through a transaction-mode pooler no statement is prepared by name: each is planned as it runs")
			}
			d.SetMaxOpenConns(1) // pg_prepared_statements is the connection's
			p := newPostgres(d)
			ctx := context.Background()
			if state.before != "" {
				if _, err := p.sqldb.ExecContext(ctx, state.before); err != nil {
					t.Fatal(err)
				}
			}
			backlog(t, p, 40_000, state.after)
			r := driver.Reservation{Queue: "default", Now: 1 << 40, Limit: size}
			plans := func(stmt string) (generic, custom int) {
				t.Helper()
				if err := d.DB.DB.QueryRowContext(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", stmt).Scan(&generic, &custom); err != nil {
					t.Fatalf("the statement is not prepared on the connection: %v", err)
				}
				return generic, custom
			}
			sized := func(r driver.Reservation) string {
				stmt, _ := statementOf(p.base, nil, r, size)
				return stmt
			}
			byPriority, rated, fair := r, r, r
			byPriority.Features, rated.Features, fair.Features = driver.FeaturePriority, driver.FeatureRate, driver.FeatureFair
			for _, c := range []struct {
				name string
				r    driver.Reservation
				stmt string
			}{
				{"by due time", r, sized(r)},
				{"by priority", byPriority, sized(byPriority)},
				{"rated", rated, sized(rated)},
				{"fair", fair, sized(fair)},
			} {
				for range 30 {
					if got, err := p.Reserve(ctx, c.r); err != nil || len(got) != size {
						t.Fatalf("Reserve %s = %d jobs, %v", c.name, len(got), err)
					}
				}
				if generic, custom := plans(c.stmt); generic != 25 || custom != 5 {
					t.Errorf("the reservation of %d %s: %d generic plans and %d custom ones; want 25 and 5", size, c.name, generic, custom)
				}
			}
			r.Limit = large
			stmt, args := withLimitParameter(p, r)
			for range 30 {
				if got, err := p.reserveWith(ctx, stmt, args); err != nil || len(got) != large {
					t.Fatalf("reserve with a LIMIT parameter = %d jobs, %v", len(got), err)
				}
			}
			if generic, custom := plans(stmt); generic != 25 || custom != 5 {
				t.Errorf("the reservation of %d, its LIMIT a parameter: %d generic plans and %d custom ones; want 25 and 5", large, generic, custom)
			}
		})
	}
}

// TestAReservationTakesItsLimitExactly: whatever the limit and however
// many jobs wait, a reservation takes the first min(limit, waiting) by
// due time, or by priority and then due time, with rate limits whose
// windows stay open or without (on PostgreSQL with the limit a
// constant up to plan.MaxSize, a parameter above).
func TestAReservationTakesItsLimitExactly(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			n := 0
			for _, mode := range []struct{ prioritized, rated bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				prioritized := mode.prioritized
				for _, waiting := range []int{0, 1, 16, 17, 40} {
					for _, limit := range []int{1, 3, 16, 17, 31, 33, 40, 1100} {
						// The features recorded go with the jobs, as a worker's tidy
						// forgets them (driver.Features).
						if _, err := d.ExecContext(ctx, "DELETE FROM jobs; DELETE FROM queue_features"); err != nil {
							t.Fatal(err)
						}
						jobs := make([]*driver.Job, waiting)
						for i := range jobs {
							jobs[i] = job(n)
							jobs[i].AvailableAt = int64(1000 - i) // due in the opposite order of their ids
							if prioritized {
								jobs[i].Priority = i%3 - 1 // -1, 0 and 1
							}
							if mode.rated && i%2 == 0 { // in windows that stay open
								jobs[i].RateKey, jobs[i].Rate = fmt.Sprint("k", i%4), driver.Rate{Max: 1_000_000, PerMs: 1000}
							}
							n++
						}
						if waiting > 0 {
							if _, err := drv.InsertMany(ctx, nil, jobs, 1); err != nil {
								t.Fatal(err)
							}
						}
						// The reference: by priority, then due time, the first limit.
						order := slices.Clone(jobs)
						slices.SortStableFunc(order, func(a, b *driver.Job) int {
							return cmp.Or(b.Priority-a.Priority, cmp.Compare(a.AvailableAt, b.AvailableAt))
						})
						var want []string
						for _, j := range order[:min(limit, waiting)] {
							want = append(want, j.ID)
						}
						got, err := drv.Reserve(ctx, driver.Reservation{Features: features(prioritized, driver.FeaturePriority) | features(mode.rated, driver.FeatureRate), Queue: "default", Now: 2000, At: 2000, Limit: limit})
						if err != nil {
							t.Fatal(err)
						}
						ids := make([]string, len(got))
						for i, j := range got {
							ids[i] = j.ID
						}
						if !slices.Equal(ids, want) {
							t.Fatalf("%d waiting (%+v), limit %d: reserved %d jobs %v;\nwant %d %v", waiting, mode, limit, len(ids), ids, len(want), want)
						}
					}
				}
			}
		})
	}
}

// TestAFairReservationTakesWhatTheMemoryDriverTakes: a Fair reservation,
// with and without priorities, takes the jobs the memory driver takes of
// the same jobs (the reference of the rule), whatever the limit and
// however many wait (on PostgreSQL with the limit a constant up to
// plan.MaxSize, a parameter above).
func TestAFairReservationTakesWhatTheMemoryDriverTakes(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			n := 0
			for _, prioritized := range []bool{false, true} {
				for _, waiting := range []int{1, 17, 40} {
					for _, limit := range []int{1, 5, 16, 17, 33, 100} {
						if _, err := d.ExecContext(ctx, "DELETE FROM jobs; DELETE FROM queue_features; DELETE FROM queue_fair"); err != nil {
							t.Fatal(err)
						}
						ref := memdriver.New()
						jobs := make([]*driver.Job, waiting)
						for i := range jobs {
							jobs[i] = job(n)
							jobs[i].AvailableAt = int64(1000 - i)
							if i%3 != 0 {
								jobs[i].FairKey = fmt.Sprint("tenant-", i%4)
							}
							if prioritized && i%5 == 0 {
								jobs[i].Priority = i%2*2 - 1 // -1 or 1
							}
							n++
						}
						for _, s := range []driver.Driver{drv, ref} {
							for _, j := range jobs { // one at a time: places are given in dispatch order
								c := *j
								if _, err := s.InsertMany(ctx, nil, []*driver.Job{&c}, 1); err != nil {
									t.Fatal(err)
								}
							}
						}
						r := driver.Reservation{Features: features(prioritized, driver.FeaturePriority) | driver.FeatureFair, Queue: "default", Now: 2000, At: 2000, Limit: limit}
						want, err := ref.Reserve(ctx, r)
						if err != nil {
							t.Fatal(err)
						}
						got, err := drv.Reserve(ctx, r)
						if err != nil {
							t.Fatal(err)
						}
						ids := func(jobs []*driver.Job) (out []string) {
							for _, j := range jobs {
								out = append(out, j.ID)
							}
							return out
						}
						if !slices.Equal(ids(got), ids(want)) {
							t.Fatalf("%d waiting (prioritized %t), limit %d: reserved %v;\nthe memory driver %v", waiting, prioritized, limit, ids(got), ids(want))
						}
					}
				}
			}
		})
	}
}

// backlog stores n jobs due 1 ms apart on p's queue "default" and has
// the server analyze jobs, as autovacuum does a busy table.
func backlog(tb testing.TB, p *postgresDriver, n int, after string) {
	tb.Helper()
	ctx := context.Background()
	jobs := make([]*driver.Job, n)
	for i := range jobs {
		jobs[i] = job(i)
		jobs[i].AvailableAt = int64(i + 1)
	}
	for c := range slices.Chunk(jobs, 1000) {
		if _, err := p.InsertMany(ctx, nil, c, 1); err != nil {
			tb.Fatal(err)
		}
	}
	if after == "" {
		return
	}
	if _, err := p.sqldb.ExecContext(ctx, after); err != nil {
		tb.Fatal(err)
	}
}
