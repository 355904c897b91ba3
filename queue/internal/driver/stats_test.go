package driver_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// numberOf is the n of a newJob's id.
func numberOf(t *testing.T, id string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(id, "01900000-0000-7000-8000-%012d", &n); err != nil {
		t.Fatalf("id %q is not a test job's", id)
	}
	return n
}

func reserveAt(t *testing.T, s driver.Driver, queue string, now, at int64) *driver.Job {
	t.Helper()
	jobs, err := s.Reserve(ctx, driver.Reservation{Queue: queue, Now: now, At: at, Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("reserve on %s: %d jobs, %v", queue, len(jobs), err)
	}
	return jobs[0]
}

func stats(t *testing.T, s driver.Driver, now, at int64) []driver.Stats {
	t.Helper()
	got, err := s.Stats(ctx, now, at, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestStatsAndUnknownReadTheKeyedJobs: the jobs with a fairness key wait
// in an index of their own (jobs_fair_due); the counts, the oldest job,
// the list of queues (a queue of keyed jobs alone among them) and
// Unknown read it beside jobs_waiting, and the counts stop at the limit
// across both.
func TestStatsAndUnknownReadTheKeyedJobs(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		keyed := func(n int, queue string, at int64) *driver.Job {
			j := newJob(n, queue, at)
			j.FairKey, j.Name = "tenant:1", "keyed.job"
			return j
		}
		insert(t, s, newJob(1, "a", 30), keyed(2, "a", 10), newJob(3, "a", 50), keyed(4, "a", 200),
			keyed(5, "k", 40), keyed(6, "k", 300))
		want := []driver.Stats{
			{Queue: "a", Waiting: 3, Delayed: 1, OldestAvailableAt: 10},
			{Queue: "k", Waiting: 1, Delayed: 1, OldestAvailableAt: 40},
		}
		if got := stats(t, s, 100, 100); !slices.Equal(got, want) {
			t.Errorf("Stats = %+v\nwant %+v", got, want)
		}
		capped, err := s.Stats(ctx, 100, 100, 2)
		if err != nil || len(capped) != 2 || capped[0].Waiting != 2 || capped[0].Delayed != 1 {
			t.Errorf("Stats with a limit of 2 = %+v, %v; want a's waiting jobs counted to 2", capped, err)
		}
		unknown, err := s.Unknown(ctx, "a", []string{"test.job"}, 100)
		if err != nil || !maps.Equal(unknown, map[string]int{"keyed.job": 2}) {
			t.Errorf("Unknown(a) = %v, %v; want the two keyed jobs of an unknown type", unknown, err)
		}
	})
}

// TestStatsCountsEveryState: every queue with a job, in jobs or in
// failed_jobs, by name; a job due at now waits; stale is judged as Stale
// judges it, at the same bounds.
func TestStatsCountsEveryState(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		if got := stats(t, s, 0, 1); len(got) != 0 {
			t.Fatalf("Stats of an empty store = %+v", got)
		}
		timed, unlimited, failed := newJob(1, "a", 0), newJob(2, "a", 0), newJob(3, "a", 0)
		unlimited.TimeoutMs = 0
		insert(t, s, timed, unlimited, failed, newJob(4, "c", 0))
		reserveAt(t, s, "a", 10, 10) // timed: stale at 10 + 90 s
		reserveAt(t, s, "a", 10, 10) // unlimited: stale at 10 + a day
		fail(t, s, reserveAt(t, s, "a", 10, 10), "no", 20)
		fail(t, s, reserveAt(t, s, "c", 10, 10), "no", 20) // c has only a failed job
		insert(t, s, newJob(5, "a", 100), newJob(6, "a", 50), newJob(7, "a", 200), newJob(8, "a", 201), newJob(9, "b", 1000))

		tests := []struct {
			at    int64
			stale int
		}{
			{10 + 90_000 - 1, 0},
			{10 + 90_000, 1},
			{10 + 86_400_000 - 1, 1},
			{10 + 86_400_000, 2},
		}
		for _, tt := range tests {
			want := []driver.Stats{
				{Queue: "a", Waiting: 3, Delayed: 1, Running: 2, Stale: tt.stale, Failed: 1, OldestAvailableAt: 50},
				{Queue: "b", Delayed: 1},
				{Queue: "c", Failed: 1},
			}
			if got := stats(t, s, 200, tt.at); !slices.Equal(got, want) {
				t.Errorf("Stats(now 200, at %d) =\n%+v\nwant\n%+v", tt.at, got, want)
			}
			if stale, err := s.Stale(ctx, "a", tt.at); err != nil || stale != (tt.stale > 0) {
				t.Errorf("Stale(a, %d) = %v, %v; Stats counted %d stale", tt.at, stale, err, tt.stale)
			}
		}
		if got := stats(t, s, 49, 1); got[0].Waiting != 0 || got[0].Delayed != 4 {
			t.Errorf("before any is due: %+v, want 4 delayed, none waiting", got[0])
		}
	})
}

// TestStatsStopsCountingAtTheLimit: the waiting, delayed and failed jobs
// of each queue are counted up to the limit, each state on its own, so
// that counting a backlog of millions costs what counting the limit does;
// the oldest waiting job is still the oldest of all.
func TestStatsStopsCountingAtTheLimit(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := range 5 {
			insert(t, s, newJob(n+1, "a", int64(10+n)), newJob(n+11, "a", 1000+int64(n)), newJob(n+21, "b", int64(50+n)), newJob(n+31, "a", int64(20+n)))
		}
		for range 5 {
			fail(t, s, reserveAt(t, s, "a", 100, 100), "no", 200)
		}
		got, err := s.Stats(ctx, 100, 100, 3)
		if err != nil {
			t.Fatal(err)
		}
		want := []driver.Stats{
			{Queue: "a", Waiting: 3, Delayed: 3, Failed: 3, OldestAvailableAt: 20}, // those due at 10 to 14 failed
			{Queue: "b", Waiting: 3, OldestAvailableAt: 50},
		}
		if !slices.Equal(got, want) {
			t.Errorf("Stats(limit 3) =\n%+v\nwant\n%+v", got, want)
		}
	})
}

// TestStatsOnTheDriversClock: at 0, stale is judged on the driver's own
// clock of reservations (PostgreSQL's server clock, SQLite's host clock,
// memory's monotonic clock), as Stale judges it.
func TestStatsOnTheDriversClock(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, newJob(1, "a", 0), newJob(2, "a", 0))
		reserveAt(t, s, "a", 10, 0) // now, on the driver's clock
		if got := stats(t, s, 10, 0); got[0].Running != 1 || got[0].Stale != 0 {
			t.Fatalf("a job reserved now: %+v, want running and not stale", got[0])
		}
		reserveAt(t, s, "a", 10, 1) // in 1970
		if got := stats(t, s, 10, 0); got[0].Running != 2 || got[0].Stale != 1 {
			t.Fatalf("a job reserved long ago: %+v, want 1 of 2 running stale", got[0])
		}
		if stale, _ := s.Stale(ctx, "a", 0); !stale {
			t.Fatal("Stale on the driver's clock disagrees")
		}
	})
}

// page lists every job of q, q.Limit at a time, and returns the numbers
// of their ids page by page.
func pages(t *testing.T, s driver.Driver, q driver.JobsQuery) [][]int {
	t.Helper()
	var out [][]int
	for range 20 {
		jobs, err := s.Jobs(ctx, q)
		if err != nil {
			t.Fatalf("Jobs(%+v): %v", q, err)
		}
		if len(jobs) == 0 {
			return out
		}
		var ns []int
		for _, j := range jobs {
			ns = append(ns, numberOf(t, j.ID))
		}
		out = append(out, ns)
		q.After = jobs[len(jobs)-1].Key(q.State)
	}
	t.Fatalf("Jobs(%+v) never ends", q)
	return nil
}

func samePages(a, b [][]int) bool { return slices.EqualFunc(a, b, slices.Equal[[]int]) }

// TestJobsWaitingAndDelayedInRunOrder: waiting and delayed jobs come by
// when they are due, then by id (the order workers take them), the
// queues merged; filters by queue and by type; a job due at now waits.
func TestJobsWaitingAndDelayedInRunOrder(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "some with a fairness key"}[keyed], func(t *testing.T) {
			jobsInRunOrder(t, keyed)
		})
	}
}

// jobsInRunOrder is TestJobsWaitingAndDelayedInRunOrder, with a fairness
// key on every other job when keyed: those wait in an index of their own
// (jobs_fair_due), and each page is the first of both.
func jobsInRunOrder(t *testing.T, keyed bool) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		other := newJob(9, "b", 5)
		other.Name = "other.job"
		all := []*driver.Job{newJob(1, "a", 30), newJob(2, "a", 10), newJob(4, "a", 20), newJob(3, "a", 20), newJob(5, "a", 500),
			newJob(6, "a", 100), newJob(7, "b", 20), newJob(8, "b", 600), other, newJob(10, "c", 101)}
		if keyed {
			for i, j := range all {
				if i%2 == 1 {
					j.FairKey = "tenant:" + j.Queue
				}
			}
		}
		insert(t, s, all...)
		tests := []struct {
			name string
			give driver.JobsQuery
			want [][]int
		}{
			{"waiting", driver.JobsQuery{State: driver.Waiting}, [][]int{{9, 2}, {3, 4}, {7, 1}, {6}}},
			{"waiting of a", driver.JobsQuery{State: driver.Waiting, Queue: "a"}, [][]int{{2, 3}, {4, 1}, {6}}},
			{"waiting of a type", driver.JobsQuery{State: driver.Waiting, Name: "test.job"}, [][]int{{2, 3}, {4, 7}, {1, 6}}},
			{"waiting of b and a type", driver.JobsQuery{State: driver.Waiting, Queue: "b", Name: "other.job"}, [][]int{{9}}},
			{"waiting of no queue", driver.JobsQuery{State: driver.Waiting, Queue: "none"}, nil},
			{"delayed", driver.JobsQuery{State: driver.Delayed}, [][]int{{10, 5}, {8}}},
			{"delayed of b", driver.JobsQuery{State: driver.Delayed, Queue: "b"}, [][]int{{8}}},
			{"delayed of a type", driver.JobsQuery{State: driver.Delayed, Name: "other.job"}, nil},
		}
		for _, tt := range tests {
			tt.give.Now, tt.give.Limit = 100, 2
			if got := pages(t, s, tt.give); !samePages(got, tt.want) {
				t.Errorf("%s: pages %v, want %v", tt.name, got, tt.want)
			}
		}
		// A page from a cursor before now's jobs still holds only delayed
		// ones.
		jobs, err := s.Jobs(ctx, driver.JobsQuery{State: driver.Delayed, Now: 100, After: driver.JobKey{At: 20, ID: newJob(3, "", 0).ID}, Limit: 10})
		if err != nil || len(jobs) != 3 || numberOf(t, jobs[0].ID) != 10 {
			t.Fatalf("delayed from a cursor among waiting jobs: %+v, %v; want 10, 5 and 8", jobs, err)
		}
	})
}

// TestJobsRunningAndFailedInTheirOrder: running jobs by when they were
// reserved, failed ones by when they failed, then by id.
func TestJobsRunningAndFailedInTheirOrder(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		odd := newJob(14, "a", 0)
		odd.Name = "other.job"
		insert(t, s, newJob(10, "a", 0), newJob(11, "a", 0), newJob(12, "a", 0), newJob(13, "b", 0), odd)
		for _, r := range []struct {
			queue string
			at    int64
		}{{"a", 300}, {"a", 100}, {"a", 200}, {"a", 100}, {"b", 200}} { // 10, 11, 12, 14; 13
			reserveAt(t, s, r.queue, 0, r.at)
		}
		running := []struct {
			name string
			give driver.JobsQuery
			want [][]int
		}{
			{"running", driver.JobsQuery{State: driver.Running}, [][]int{{11, 14}, {12, 13}, {10}}},
			{"running of a", driver.JobsQuery{State: driver.Running, Queue: "a"}, [][]int{{11, 14}, {12, 10}}},
			{"running of a type", driver.JobsQuery{State: driver.Running, Name: "other.job"}, [][]int{{14}}},
			{"running of b and a type", driver.JobsQuery{State: driver.Running, Queue: "b", Name: "other.job"}, nil},
			{"waiting", driver.JobsQuery{State: driver.Waiting}, nil},
		}
		for _, tt := range running {
			tt.give.Now, tt.give.Limit = 1000, 2
			if got := pages(t, s, tt.give); !samePages(got, tt.want) {
				t.Errorf("%s: pages %v, want %v", tt.name, got, tt.want)
			}
		}
		for _, f := range []struct {
			n  int
			at int64
		}{{10, 3000}, {11, 1000}, {12, 2000}, {13, 2000}, {14, 1000}} {
			fail(t, s, &driver.Job{ID: newJob(f.n, "", 0).ID, Attempts: 1}, "no", f.at)
		}
		failed := []struct {
			name string
			give driver.JobsQuery
			want [][]int
		}{
			{"failed", driver.JobsQuery{State: driver.Failed}, [][]int{{11, 14}, {12, 13}, {10}}},
			{"failed of b", driver.JobsQuery{State: driver.Failed, Queue: "b"}, [][]int{{13}}},
			{"failed of a type", driver.JobsQuery{State: driver.Failed, Name: "test.job"}, [][]int{{11, 12}, {13, 10}}},
			{"failed of a and a type", driver.JobsQuery{State: driver.Failed, Queue: "a", Name: "other.job"}, [][]int{{14}}},
			{"running", driver.JobsQuery{State: driver.Running}, nil},
		}
		for _, tt := range failed {
			tt.give.Now, tt.give.Limit = 1000, 2
			if got := pages(t, s, tt.give); !samePages(got, tt.want) {
				t.Errorf("%s: pages %v, want %v", tt.name, got, tt.want)
			}
		}
	})
}

// TestJobInfoHoldsWhatAnOperatorNeeds: each time where it is set, the
// last error, and the payload's size in bytes, not its characters.
func TestJobInfoHoldsWhatAnOperatorNeeds(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		j := newJob(1, "a", 5)
		j.Payload, j.CreatedAt, j.MaxAttempts = []byte(`{"s":"héllo ☃"}`), 4, 7
		insert(t, s, j)
		only := func(q driver.JobsQuery) driver.JobInfo {
			t.Helper()
			q.Limit = 10
			jobs, err := s.Jobs(ctx, q)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Jobs(%+v) = %+v, %v; want one job", q, jobs, err)
			}
			return jobs[0]
		}
		want := driver.JobInfo{ID: j.ID, Queue: "a", Name: "test.job", MaxAttempts: 7, AvailableAt: 5, CreatedAt: 4, PayloadSize: 18}
		if got := only(driver.JobsQuery{State: driver.Waiting, Now: 5}); got != want {
			t.Errorf("waiting\n%+v\nwant\n%+v", got, want)
		}
		r := reserveAt(t, s, "a", 10, 20)
		want.Attempts, want.ReservedAt = 1, 20
		if got := only(driver.JobsQuery{State: driver.Running}); got != want {
			t.Errorf("running\n%+v\nwant\n%+v", got, want)
		}
		if ok, err := s.Release(ctx, r.ID, r.Attempts, 900, driver.Failure{Error: "smtp refused"}); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		want.AvailableAt, want.ReservedAt, want.LastError = 900, 0, "smtp refused"
		if got := only(driver.JobsQuery{State: driver.Delayed, Now: 899}); got != want {
			t.Errorf("released\n%+v\nwant\n%+v", got, want)
		}
		fail(t, s, reserveAt(t, s, "a", 900, 950), "gave up\nat last", 1000)
		want = driver.JobInfo{ID: j.ID, Queue: "a", Name: "test.job", Attempts: 2, MaxAttempts: 7, CreatedAt: 4, FailedAt: 1000,
			LastError: "gave up\nat last", PayloadSize: 18}
		if got := only(driver.JobsQuery{State: driver.Failed}); got != want {
			t.Errorf("failed\n%+v\nwant\n%+v", got, want)
		}
	})
}
