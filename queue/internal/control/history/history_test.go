package history_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

// TestHistoryKeepsEveryFailureAndTheSuccesses: each failed attempt's
// error travels with its job, through a retry of the failed job, into
// failed_jobs; Complete with keep moves a success to succeeded_jobs with
// its finish, run, wait, worker and errors, where Lookup and Jobs read it
// and PruneSucceeded deletes the oldest first; without keep, or for an
// attempt fenced out, nothing is kept.
func TestHistoryKeepsEveryFailureAndTheSuccesses(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		const w = "0193f2b0-0000-7000-8000-00000000000a"
		drivertest.Insert(t, s, drivertest.Job(1, "a", 0), drivertest.Job(3, "b", 0))
		run := func(now int64) *driver.Job {
			t.Helper()
			jobs, err := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: now, At: now, By: w, Limit: 1})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Reserve = %v, %v", jobs, err)
			}
			return jobs[0]
		}
		// Job 1 fails twice, the second time for good; retried, it
		// succeeds at its first attempt of the new run.
		j := run(100)
		first := driver.Failure{Attempt: 1, At: 150, Ms: 50, Worker: w, Error: "smtp: 451 try later"}
		if ok, err := s.Release(ctx, j.ID, 1, 200, first); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		found, err := s.Lookup(ctx, j.ID)
		if err != nil || found.Job == nil || !slices.Equal(found.Job.Errors, []driver.Failure{first}) {
			t.Fatalf("Lookup of the released job = %+v, %v; want its failure", found, err)
		}
		j = run(200)
		second := driver.Failure{Attempt: 2, At: 260, Ms: 60, Worker: w, Error: "smtp: 550 no such user \"ada\"\nsecond line"}
		if ok, err := s.Fail(ctx, j.ID, 2, second); !ok || err != nil {
			t.Fatalf("Fail = %v, %v", ok, err)
		}
		found, err = s.Lookup(ctx, j.ID)
		if err != nil || found.Failed == nil || found.Failed.Error != second.Error || !slices.Equal(found.Failed.Errors, []driver.Failure{first, second}) {
			t.Fatalf("Lookup of the failed job = %+v, %v; want both failures", found.Failed, err)
		}
		if err := s.Retry(ctx, j.ID, 300); err != nil {
			t.Fatal(err)
		}
		j = run(300)
		if j.ID != drivertest.Job(1, "a", 0).ID || j.Attempts != 1 {
			t.Fatalf("after the retry reserved %s attempt %d", j.ID, j.Attempts)
		}
		// Job 2 succeeds without keep: nothing is kept.
		drivertest.Insert(t, s, drivertest.Job(2, "a", 0))
		j2 := run(300)
		if ids, err := s.Complete(ctx, []driver.Attempt{{ID: j2.ID, Attempt: 1}}, false); len(ids) != 1 || err != nil {
			t.Fatalf("Complete = %v, %v", ids, err)
		}
		if _, err := s.Lookup(ctx, j2.ID); !errors.Is(err, driver.ErrNoJob) {
			t.Fatalf("Lookup of a job completed without keep: %v; want ErrNoJob", err)
		}
		// Job 1 succeeds with keep; a fenced-out attempt is not kept.
		ids, err := s.Complete(ctx, []driver.Attempt{{ID: j.ID, Attempt: 1, At: 400, Ms: 70, Wait: 20}, {ID: j2.ID, Attempt: 1, At: 400}}, true)
		if err != nil || !slices.Equal(ids, []string{j.ID}) {
			t.Fatalf("Complete with keep = %v, %v; want job 1 alone", ids, err)
		}
		found, err = s.Lookup(ctx, j.ID)
		want := driver.SucceededJob{ID: j.ID, Queue: "a", Name: "test.job", Payload: []byte(`{"n":1}`), MaxAttempts: 3, Attempts: 1, CreatedAt: 1,
			FinishedAt: 400, RunMs: 70, WaitMs: 20, Worker: w, Errors: []driver.Failure{first, second}}
		if err != nil || found.Succeeded == nil || fmt.Sprint(*found.Succeeded) != fmt.Sprint(want) {
			t.Fatalf("Lookup of the kept job = %+v, %v;\nwant %+v", found.Succeeded, err, want)
		}
		// Two more kept, on queue b and a; the page of succeeded jobs goes
		// by when they finished.
		jobs, _ := s.Reserve(ctx, driver.Reservation{Queue: "b", Now: 500, At: 500, Limit: 1})
		if _, err := s.Complete(ctx, []driver.Attempt{{ID: jobs[0].ID, Attempt: 1, At: 390, Ms: 1}}, true); err != nil {
			t.Fatal(err)
		}
		infos, err := s.Jobs(ctx, driver.JobsQuery{State: driver.Succeeded, Limit: 10})
		if err != nil || len(infos) != 2 || infos[0].ID != jobs[0].ID || infos[1].ID != j.ID || infos[1].FinishedAt != 400 ||
			infos[1].RunMs != 70 || infos[1].WaitMs != 20 || infos[1].ReservedBy != w || infos[1].PayloadSize != 7 {
			t.Fatalf("Jobs(succeeded) = %+v, %v", infos, err)
		}
		if infos, err := s.Jobs(ctx, driver.JobsQuery{State: driver.Succeeded, Queue: "a", After: infos[0].Key(driver.Succeeded), Limit: 10}); err != nil ||
			len(infos) != 1 || infos[0].ID != j.ID {
			t.Fatalf("Jobs(succeeded of a, after the first) = %+v, %v", infos, err)
		}
		// A purge of queue b (queue:bench's clean-up) takes its kept job,
		// and leaves a's.
		if n, err := s.Purge(ctx, "b"); n != 0 || err != nil {
			t.Fatalf("Purge(b) = %d, %v; want 0 (kept successes are not counted)", n, err)
		}
		if _, err := s.Lookup(ctx, jobs[0].ID); !errors.Is(err, driver.ErrNoJob) {
			t.Fatalf("Lookup of b's kept job after its queue's purge: %v; want ErrNoJob", err)
		}
		if found, err := s.Lookup(ctx, j.ID); err != nil || found.Succeeded == nil {
			t.Fatalf("Lookup of a's kept job after b's purge = %+v, %v", found, err)
		}
		if n, err := s.PruneSucceeded(ctx, 400, 10); n != 0 || err != nil {
			t.Fatalf("PruneSucceeded(before 400) = %d, %v; want none, the one that finished at 390 purged", n, err)
		}
		if n, err := s.PruneSucceeded(ctx, 401, 10); n != 1 || err != nil {
			t.Fatalf("PruneSucceeded(before 401) = %d, %v", n, err)
		}
		if _, err := s.Lookup(ctx, j.ID); !errors.Is(err, driver.ErrNoJob) {
			t.Fatalf("Lookup after the prune: %v", err)
		}
	})
}

// TestASuccessKeptAgainStaysAsFirstKept: a job whose id is kept already
// (stored again under that id, as an operator may) completes with keep:
// the completion deletes it and the first success kept stays as it was.
func TestASuccessKeptAgainStaysAsFirstKept(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for _, at := range []int64{100, 200} {
			drivertest.Insert(t, s, drivertest.Job(9, "again", 0))
			jobs, err := s.Reserve(ctx, driver.Reservation{Queue: "again", Now: at, At: at, Limit: 1})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Reserve = %v, %v", jobs, err)
			}
			ids, err := s.Complete(ctx, []driver.Attempt{{ID: jobs[0].ID, Attempt: 1, At: at + 10, Ms: 10}}, true)
			if err != nil || len(ids) != 1 {
				t.Fatalf("Complete with keep at %d = %v, %v; want the job deleted", at, ids, err)
			}
		}
		found, err := s.Lookup(ctx, drivertest.Job(9, "again", 0).ID)
		if err != nil || found.Job != nil || found.Succeeded == nil || found.Succeeded.FinishedAt != 110 {
			t.Fatalf("Lookup = %+v, %v; want the success kept first, finished at 110", found.Succeeded, err)
		}
	})
}

// TestTimingsAddUpAndAgeOut: AddThroughput adds timings to those of the
// same minute, queue, type, kind and bucket, Timings reads them from a
// minute on, of a queue and a type, and the timings of minutes before
// keepFrom are deleted.
func TestTimingsAddUpAndAgeOut(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		add := func(keepFrom int64, timings ...driver.Timing) {
			t.Helper()
			if err := s.AddThroughput(ctx, nil, timings, keepFrom); err != nil {
				t.Fatal(err)
			}
		}
		run := driver.Timing{Queue: "mail", Name: "mail.send", Minute: 60_000, Bucket: 7, Count: 2}
		wait := run
		wait.Wait, wait.Bucket, wait.Count = true, 30, 1
		other := driver.Timing{Queue: "default", Name: "contacts.export", Minute: 120_000, Bucket: 9, Count: 5}
		add(0, run, wait, other)
		run.Count = 3
		add(0, run)
		got, err := s.Timings(ctx, 0, "mail", "")
		want := []driver.Timing{{Queue: "mail", Name: "mail.send", Minute: 60_000, Bucket: 7, Count: 5}, wait}
		slices.SortFunc(got, func(a, b driver.Timing) int { return a.Bucket - b.Bucket })
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Timings(mail) = %+v, %v; want %+v", got, err, want)
		}
		if got, _ := s.Timings(ctx, 0, "", "contacts.export"); !slices.Equal(got, []driver.Timing{other}) {
			t.Fatalf("Timings(contacts.export) = %+v", got)
		}
		if got, _ := s.Timings(ctx, 120_000, "", ""); !slices.Equal(got, []driver.Timing{other}) {
			t.Fatalf("Timings(from 120000) = %+v", got)
		}
		add(120_000, driver.Timing{Queue: "mail", Name: "mail.send", Minute: 180_000, Count: 1})
		if got, _ := s.Timings(ctx, 0, "mail", ""); len(got) != 1 || got[0].Minute != 180_000 {
			t.Fatalf("after keepFrom 120000: %+v; want the minute 60000 deleted", got)
		}
	})
}
