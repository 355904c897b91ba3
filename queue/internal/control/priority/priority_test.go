package priority_test

import (
	"cmp"
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/control"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

func prioritized(n int, queue string, availableAt int64, priority int) *driver.Job {
	j := drivertest.Job(n, queue, availableAt)
	j.Priority = priority
	return j
}

// TestPriorityOrdersTheDueJobs: of the jobs due, higher priorities go
// first, then by due time and id; a job with a priority that is not due
// yet waits; the cursor leaves out none that has a priority.
func TestPriorityOrdersTheDueJobs(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		drivertest.Insert(t, s,
			prioritized(1, "a", 10, 0),
			prioritized(2, "a", 50, 5),
			prioritized(3, "a", 40, 5),
			prioritized(4, "a", 5, -2),
			prioritized(5, "a", 500, 9), // not due at 100
			prioritized(6, "a", 20, 1),
			prioritized(7, "a", 30, 0),
			prioritized(8, "b", 0, 9), // another queue
		)
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeaturePriority, Queue: "a", Now: 100, At: 100, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if got := drivertest.Tails(jobs); got != "3 2 6 1" {
			t.Fatalf("reserved %s, want 3 2 6 1: priority 5 by due time, then 1, then 0", got)
		}
		if jobs[0].Priority != 5 || jobs[2].Priority != 1 || jobs[3].Priority != 0 {
			t.Fatalf("the reserved jobs do not read their priorities: %+v", jobs)
		}
		// From past every job: it leaves out the waiting job of priority
		// 0 (7, at 30), not the one of priority -2 (at 5).
		jobs, err = s.Reserve(ctx, driver.Reservation{Features: driver.FeaturePriority, Queue: "a", Now: 100, At: 100, From: 60, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		_, isMemory := s.(*memdriver.Driver)
		want, rest := "4", "7"
		if isMemory { // it ignores From
			want, rest = "7 4", ""
		}
		if got := drivertest.Tails(jobs); got != want {
			t.Fatalf("reserved from 60: %s, want %s", got, want)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 100)); got != rest {
			t.Fatalf("the rest at 100: %s, want %q", got, rest)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 500)); got != "5" {
			t.Fatalf("at 500: %s, want the delayed job of priority 9", got)
		}
	})
}

// TestPriorityAgainstABruteForceReference: random jobs (priorities, due
// times, some not due), reserved in random batches as time goes on, come
// out exactly in the order a sort of the due jobs gives.
func TestPriorityAgainstABruteForceReference(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		r := rand.New(rand.NewPCG(7, 30))
		var all []*driver.Job
		for n := range 300 {
			p := 0
			if r.IntN(3) == 0 {
				p = r.IntN(7) - 3
			}
			all = append(all, prioritized(n, "a", int64(r.IntN(1000)), p))
		}
		drivertest.Insert(t, s, all...)
		left := slices.Clone(all)
		for now := int64(0); len(left) > 0; now += 50 {
			for {
				limit := 1 + r.IntN(12)
				got, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeaturePriority, Queue: "a", Now: now, At: now, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				var due []*driver.Job
				for _, j := range left {
					if j.AvailableAt <= now {
						due = append(due, j)
					}
				}
				slices.SortFunc(due, func(a, b *driver.Job) int {
					return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
				})
				want := due[:min(limit, len(due))]
				if len(got) != len(want) {
					t.Fatalf("at %d, limit %d: reserved %d jobs, want %d", now, limit, len(got), len(want))
				}
				for i := range want {
					if got[i].ID != want[i].ID {
						t.Fatalf("at %d, limit %d: job %d is %s (priority %d, due %d), want %s (priority %d, due %d)",
							now, limit, i, got[i].ID, got[i].Priority, got[i].AvailableAt, want[i].ID, want[i].Priority, want[i].AvailableAt)
					}
					left = slices.DeleteFunc(left, func(j *driver.Job) bool { return j.ID == want[i].ID })
				}
				if len(got) < limit {
					break
				}
			}
		}
	})
}

// TestPriorityIsKeptThroughAFailureAndItsRetry.
func TestPriorityIsKeptThroughAFailureAndItsRetry(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		drivertest.Insert(t, s, prioritized(1, "a", 0, 3))
		j := drivertest.Reserve(t, s, "a", 10)
		if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "boom", At: 20}); !ok || err != nil {
			t.Fatalf("Fail = %v, %v", ok, err)
		}
		failed, err := s.Failed(ctx, driver.FailedKey{}, 10, false)
		if err != nil || len(failed) != 1 || failed[0].Priority != 3 {
			t.Fatalf("Failed: %+v, %v; want the job with priority 3", failed, err)
		}
		if found, err := s.Lookup(ctx, j.ID); err != nil || found.Failed == nil || found.Failed.Priority != 3 {
			t.Fatalf("Lookup of the failed job: %+v, %v; want priority 3", found.Failed, err)
		}
		drivertest.Insert(t, s, prioritized(2, "a", 0, 0))
		if err := s.Retry(ctx, j.ID, 30); err != nil {
			t.Fatal(err)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 40)); got != "1 2" {
			t.Fatalf("after its retry: %s, want 1 2 (the retried job keeps priority 3)", got)
		}
	})
}

// TestAReservationByPriorityLocksOnlyWhatItTakes: on PostgreSQL the
// searches of a reservation by priority lock (SKIP LOCKED) only the jobs
// it reserves, so that other workers' searches meanwhile skip no more:
// with 10 jobs of priority 5 and 10 of 0 waiting, one that takes 5
// leaves 15 that another transaction can lock. It runs the plan's
// statement in a transaction kept open.
func TestAReservationByPriorityLocksOnlyWhatItTakes(t *testing.T) {
	t.Parallel()
	d := drivertest.Migrated(t, dbtest.PostgresURL(t))
	if _, err := d.ExecContext(ctx, "INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, created_at, priority) "+
		"SELECT gen_random_uuid(), 'default', 'x', '{}', 1, 'fixed:0', 0, 0, i, i, CASE WHEN i % 2 = 0 THEN 5 ELSE 0 END FROM generate_series(1, 20) AS i"); err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	st := plan.New(sqlkit.Postgres, control.Parts(), "id").Reservation(plan.Shape{Features: driver.FeaturePriority, Size: 5})
	rows, err := tx.QueryContext(ctx, st.SQL, st.Bind(&plan.Values{plan.Queue: "default", plan.Does: driver.FeaturePriority, plan.From: int64(0), plan.Now: int64(100), plan.At: int64(100)})...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n != 5 {
		t.Fatalf("reserved %d jobs; want 5", n)
	}
	var free int
	if err := d.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT id FROM jobs FOR UPDATE SKIP LOCKED) AS f").Scan(&free); err != nil {
		t.Fatal(err)
	}
	if free != 15 {
		t.Fatalf("another transaction can lock %d jobs; want 15: the reservation locked %d it did not take", free, 15-free)
	}
}
