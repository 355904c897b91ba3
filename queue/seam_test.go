package queue_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// TestNoSearchTakesAJobPastItsRule: whatever two worker processes
// believe about a queue, their searches keep every rule of the jobs on
// it. One dispatch from the test process stores, in one transaction,
// five jobs of priority 0 and then one of priority 10, eight jobs
// limited to four starts a second, six of an account limited to two at
// once, and ten jobs of three tenants taking turns (six of the first
// dispatched first). They come to the workers three ways: as a burst onto
// workers already idle (woken on PostgreSQL by the notification, on
// SQLite by their polling), onto a paused queue that is then resumed,
// and waiting before the workers start. Each time every job runs once,
// on its first attempt, and the rules hold, checked by brute force over
// the reservations the database recorded:
//
//   - priority: no worker takes a job of priority 0 in a statement
//     before the one that takes the job of priority 10 (on SQLite, whose
//     writes take turns, no worker at all);
//   - rate limit: no span of a second of the reservations' stamps holds
//     more than four of the limited jobs;
//   - concurrency limit: never more than two of the account run at once;
//   - fairness: each tenant's jobs take places 1, 2, …, and no worker
//     takes a place in a statement before a lower one (on SQLite, no
//     worker at all).
func TestNoSearchTakesAJobPastItsRule(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	for _, way := range []string{"burst onto idle workers", "paused, then resumed", "waiting before the workers start"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			eachMigrated(t, func(t *testing.T, url string) {
				d := dbtest.Open(t, url)
				for _, ddl := range []string{
					"CREATE TABLE ctl_runs (job_id TEXT NOT NULL, name TEXT NOT NULL, attempt INTEGER NOT NULL, snoozes INTEGER NOT NULL, pid INTEGER NOT NULL, started_ns BIGINT NOT NULL)",
					"CREATE TABLE rate_starts (n INTEGER NOT NULL, attempt INTEGER NOT NULL, reserved_ms BIGINT NOT NULL, at_ms BIGINT NOT NULL)",
					"CREATE TABLE lim_running (account INTEGER PRIMARY KEY, n INTEGER NOT NULL, peak INTEGER NOT NULL, runs INTEGER NOT NULL, first_attempts INTEGER NOT NULL)",
					"INSERT INTO lim_running VALUES (1, 0, 0, 0, 0)",
					"CREATE TABLE fair_starts (tenant TEXT NOT NULL, n INTEGER NOT NULL, attempt INTEGER NOT NULL, at_ns BIGINT NOT NULL)",
				} {
					if _, err := d.ExecContext(ctx, ddl); err != nil {
						t.Fatal(err)
					}
				}
				reservations := recordReservations(t, d, url)
				q := localQueue(t, url, &clock{t: time.Now()}, noop[Controlled](), noop[PartnerCall](), noop[AccountCall](), noop[TenantTask]())
				var jobs []queue.Job
				for i := range 5 {
					jobs = append(jobs, Controlled{Name: fmt.Sprint("plain ", i)})
				}
				for _, tenant := range []string{"big", "big", "big", "big", "big", "big", "a", "a", "b", "b"} {
					n := 0
					for _, j := range jobs {
						if tt, ok := j.(TenantTask); ok && tt.Tenant == tenant {
							n++
						}
					}
					jobs = append(jobs, TenantTask{Tenant: tenant, N: n})
				}
				for n := range 8 {
					jobs = append(jobs, PartnerCall{N: n})
				}
				for range 6 {
					jobs = append(jobs, AccountCall{Account: 1})
				}
				jobs = append(jobs, Controlled{Name: "urgent", Priority: 10})
				dispatch := func() {
					t.Helper()
					if _, err := q.DispatchMany(ctx, jobs...); err != nil {
						t.Fatal(err)
					}
				}
				switch way {
				case "paused, then resumed":
					if err := q.Inspector().Pause(ctx, "default"); err != nil {
						t.Fatal(err)
					}
					dispatch()
				case "waiting before the workers start":
					dispatch()
				}
				children, wait := workerChildren(t, url, 2, "queue:work", "--workers", "4")
				count := func(query string) int {
					t.Helper()
					var n int
					if err := d.QueryRowContext(ctx, query).Scan(&n); err != nil {
						t.Fatal(err)
					}
					return n
				}
				// Both registered: each has made its first search, or is
				// about to.
				for deadline := time.Now().Add(time.Minute); count("SELECT count(*) FROM queue_workers") < 2; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the workers did not register within a minute")
					}
				}
				switch way {
				case "burst onto idle workers":
					dispatch()
				case "paused, then resumed":
					if err := q.Inspector().Resume(ctx, "default"); err != nil {
						t.Fatal(err)
					}
				}
				// The workers run until every job has run (the limited ones
				// wait for their windows: --stop-when-empty would stop).
				done := func() bool {
					return count("SELECT count(*) FROM ctl_runs") >= 6 && count("SELECT count(*) FROM rate_starts") >= 8 &&
						count("SELECT runs FROM lim_running") >= 6 && count("SELECT count(*) FROM fair_starts") >= 10
				}
				for deadline := time.Now().Add(2 * time.Minute); !done(); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						break
					}
				}
				for _, cmd := range children {
					cmd.Process.Signal(syscall.SIGTERM)
				}
				wait()
				if n := count("SELECT count(*) FROM ctl_runs WHERE attempt = 1") + count("SELECT count(*) FROM rate_starts WHERE attempt = 1") +
					count("SELECT first_attempts FROM lim_running") + count("SELECT count(*) FROM fair_starts WHERE attempt = 1"); n != len(jobs) {
					t.Fatalf("%d first attempts ran; want each of the %d jobs once", n, len(jobs))
				}
				if left := count("SELECT count(*) FROM jobs") + count("SELECT count(*) FROM queue_held") + count("SELECT count(*) FROM failed_jobs"); left != 0 {
					t.Fatalf("%d jobs left", left)
				}
				all := kept(reservations())
				if len(all) != len(jobs) {
					t.Fatalf("%d reservations; want one of each of the %d jobs", len(all), len(jobs))
				}
				describe := func(r reservation) string {
					return fmt.Sprintf("%s %s (priority %d, place %d)", r.name, r.payload, r.priority, r.place)
				}

				// Priority.
				controlled := func(r reservation) bool { return r.name == "test.controlled" }
				byPriority := func(a, b reservation) bool { return a.priority > b.priority }
				inOrderByWorker(t, all, controlled, byPriority, describe)
				inOrderOnSQLite(t, url, all, controlled, byPriority, describe)

				// The rate limit: of the stamps from each on, at most four
				// within a second of it.
				var stamps []int64
				for _, r := range all {
					if r.name == "test.partner_call" {
						stamps = append(stamps, r.reservedAt)
					}
				}
				slices.Sort(stamps)
				for i, s := range stamps {
					if in := len(slices.DeleteFunc(slices.Clone(stamps[i:]), func(o int64) bool { return o >= s+1000 })); in > 4 {
						t.Fatalf("%d of the jobs limited to four a second were reserved within a second of %d: %v", in, s, stamps)
					}
				}

				// The concurrency limit.
				if peak := count("SELECT peak FROM lim_running"); peak > 2 {
					t.Fatalf("%d jobs of the account ran at once; want at most 2", peak)
				}

				// Fairness.
				tenant := func(r reservation) bool { return r.name == "test.tenant_task" }
				for _, r := range all {
					if !tenant(r) {
						continue
					}
					var tt TenantTask
					if err := json.Unmarshal([]byte(r.payload), &tt); err != nil {
						t.Fatal(err)
					}
					if r.place != int64(tt.N+1) {
						t.Fatalf("tenant %s's job %d took place %d; want %d", tt.Tenant, tt.N, r.place, tt.N+1)
					}
				}
				byPlace := func(a, b reservation) bool { return a.place < b.place }
				inOrderByWorker(t, all, tenant, byPlace, describe)
				inOrderOnSQLite(t, url, all, tenant, byPlace, describe)
			})
		})
	}
}

// kept leaves out of all the reservations that a rate-limited search gave
// back in its own transaction (its key's window was full): the job was
// reserved again later for the same attempt.
func kept(all []reservation) []reservation {
	last := map[string]int64{}
	for _, r := range all {
		last[fmt.Sprint(r.job, " ", r.attempt)] = r.seq
	}
	return slices.DeleteFunc(all, func(r reservation) bool { return last[fmt.Sprint(r.job, " ", r.attempt)] != r.seq })
}
