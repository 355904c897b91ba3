package driver_test

import (
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

func rated(n int, queue string, availableAt int64, key string, r driver.Rate) *driver.Job {
	j := newJob(n, queue, availableAt)
	j.RateKey, j.Rate = key, r
	return j
}

// t0 is a time on the clock of reservations, far from 0 (the driver's
// own clock).
const t0 = 1_000_000

// grouped is a job of queue in the group key.
func grouped(n int, queue string, availableAt int64, key string) *driver.Job {
	j := newJob(n, queue, availableAt)
	j.FairKey = key
	return j
}

func prioritized(n int, queue string, availableAt int64, priority int) *driver.Job {
	j := newJob(n, queue, availableAt)
	j.Priority = priority
	return j
}

// TestASearchTakesNothingWhileAFeatureItDoesNotDoIsRecorded: the
// transaction that stores a job with a priority, a rate limit or a
// fairness key records the feature of its queue, whichever way the job
// entered (a dispatch, a retry of a failed job); a database driver's
// search that does not do a recorded feature takes nothing, not even the
// jobs without one; one that does it takes them; the record stays while
// a job of the feature runs, and a tidy forgets it once none is left.
// The memory driver's searches do every feature, and report those of its
// waiting jobs.
func TestASearchTakesNothingWhileAFeatureItDoesNotDoIsRecorded(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		_, isMemory := s.(*memdriver.Driver)
		features := func(queue string, tidy bool) driver.Features {
			t.Helper()
			f, err := s.Features(ctx, queue, tidy)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		for _, c := range []struct {
			name    string
			job     *driver.Job
			feature driver.Features
			does    driver.Reservation
		}{
			{"priority", prioritized(9, "a", 0, -1), driver.FeaturePriority, driver.Reservation{Features: driver.FeaturePriority}},
			{"rate limit", rated(9, "a", 0, "api", driver.Rate{Max: 5, PerMs: 1000}), driver.FeatureRate, driver.Reservation{Features: driver.FeatureRate}},
			{"fairness", grouped(9, "a", 0, "tenant:1"), driver.FeatureFair, driver.Reservation{Features: driver.FeatureFair}},
		} {
			t.Run(c.name, func(t *testing.T) {
				insert(t, s, newJob(1, "a", 0), newJob(2, "b", 0))
				if f := features("a", true); f != 0 {
					t.Fatalf("Features(a) = %b with no job of a feature", f)
				}
				insert(t, s, c.job)
				if f := features("a", false); isMemory && c.feature == driver.FeatureRate {
					if f != 0 {
						t.Fatalf("the memory driver's Features(a) = %b, want none: it keeps no record of rate limits", f)
					}
				} else if f != c.feature || features("b", false) != 0 {
					t.Fatalf("Features(a) = %b, Features(b) = %b; want %b and none", f, features("b", false), c.feature)
				}
				plain := driver.Reservation{Queue: "a", Now: 100, At: 100, Limit: 10}
				jobs, err := s.Reserve(ctx, plain)
				if err != nil {
					t.Fatal(err)
				}
				if !isMemory && len(jobs) != 0 {
					t.Fatalf("a search that does not do the %s took %s, want nothing", c.name, tails(jobs))
				}
				if isMemory {
					if len(jobs) != 2 {
						t.Fatalf("the memory driver took %s, want both", tails(jobs))
					}
				} else {
					r := c.does
					r.Queue, r.Now, r.At, r.Limit = "a", 100, 100, 10
					if jobs, err = s.Reserve(ctx, r); err != nil || len(jobs) != 2 {
						t.Fatalf("the search that does the %s took %s, %v; want both jobs", c.name, tails(jobs), err)
					}
				}
				other, err := s.Reserve(ctx, driver.Reservation{Queue: "b", Now: 100, At: 100, Limit: 10})
				if err != nil || tails(other) != "2" {
					t.Fatalf("the plain search of b took %s, %v; want its job", tails(other), err)
				}
				if _, err := s.Complete(ctx, []driver.Attempt{{ID: other[0].ID, Attempt: 1}}, false); err != nil {
					t.Fatal(err)
				}
				var theOne driver.Attempt
				for _, j := range jobs {
					if j.ID == c.job.ID {
						theOne = driver.Attempt{ID: j.ID, Attempt: j.Attempts}
					} else if _, err := s.Complete(ctx, []driver.Attempt{{ID: j.ID, Attempt: j.Attempts}}, false); err != nil {
						t.Fatal(err)
					}
				}
				if !isMemory && features("a", true) != c.feature {
					t.Fatalf("a tidy forgot the %s while its job runs", c.name)
				}
				if _, err := s.Complete(ctx, []driver.Attempt{theOne}, false); err != nil {
					t.Fatal(err)
				}
				if f := features("a", true); f != 0 {
					left, _ := s.Lookup(ctx, theOne.ID)
					t.Fatalf("Features(a) = %b once every job is done, after a tidy; %+v", f, left.Job)
				}
				if jobs, err := s.Reserve(ctx, plain); err != nil || len(jobs) != 0 {
					t.Fatalf("left: %s, %v", tails(jobs), err)
				}
			})
		}
	})
}

// tails is the last digits of the jobs' ids, in order.
// TestSnoozeGivesTheAttemptBack: a snoozed job waits until its time,
// then runs the same attempt again, its snoozes counted and its errors
// untouched; a snooze of an attempt no longer current does nothing.
func TestSnoozeGivesTheAttemptBack(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, newJob(1, "a", 0))
		j := reserve(t, s, "a", 10)
		if ok, err := s.Snooze(ctx, j.ID, j.Attempts+1, 100); ok || err != nil {
			t.Fatalf("Snooze of a stale attempt = %v, %v; want false", ok, err)
		}
		if ok, err := s.Snooze(ctx, j.ID, j.Attempts, 100); !ok || err != nil {
			t.Fatalf("Snooze = %v, %v", ok, err)
		}
		if ok, _ := s.Snooze(ctx, j.ID, j.Attempts, 200); ok {
			t.Fatal("a second Snooze of the same reservation acted: the job is no longer reserved")
		}
		if again := reserve(t, s, "a", 99); again != nil {
			t.Fatalf("reserved a snoozed job before its time: %+v", again)
		}
		again := reserve(t, s, "a", 100)
		if again == nil || again.Attempts != 1 || again.Snoozes != 1 || again.AvailableAt != 100 || again.LastError != "" {
			t.Fatalf("after the snooze reserved %+v; want attempt 1 again, 1 snooze, due at 100, no error", again)
		}
		if ok, err := s.Snooze(ctx, again.ID, again.Attempts, 150); !ok || err != nil {
			t.Fatalf("second Snooze = %v, %v", ok, err)
		}
		found, err := s.Lookup(ctx, j.ID)
		if err != nil || found.Job == nil || found.Job.Snoozes != 2 || found.Job.Attempts != 0 || len(found.Job.Errors) != 0 {
			t.Fatalf("Lookup after two snoozes: %+v, %v; want 2 snoozes, no attempt, no error", found.Job, err)
		}
	})
}

// TestEveryWayIntoJobsRecordsItsFeature: a job with a feature that enters
// jobs from another table records its feature in the same transaction,
// as a dispatch does: a failed job retried, a held job let in by its
// limit, a flow's step released; a search that does not do it then takes
// nothing. (The memory driver records nothing: its searches do every
// feature.)
func TestEveryWayIntoJobsRecordsItsFeature(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		if _, isMemory := s.(*memdriver.Driver); isMemory {
			t.Skip("the memory driver's searches do every feature")
		}
		features := func(queue string) driver.Features {
			t.Helper()
			f, err := s.Features(ctx, queue, true)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		plainTakesNothing := func(queue string, now int64) {
			t.Helper()
			if jobs, err := s.Reserve(ctx, driver.Reservation{Queue: queue, Now: now, At: now, Limit: 10}); err != nil || len(jobs) != 0 {
				t.Fatalf("a plain search of %s took %s, %v; want nothing", queue, tails(jobs), err)
			}
		}

		// A failed job retried.
		insert(t, s, prioritized(1, "retried", 0, 4))
		j := reserve(t, s, "retried", 10)
		if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "boom", At: 20}); !ok || err != nil {
			t.Fatalf("Fail = %v, %v", ok, err)
		}
		if f := features("retried"); f != 0 {
			t.Fatalf("Features = %b with the job failed; want none", f)
		}
		if err := s.Retry(ctx, j.ID, 30); err != nil {
			t.Fatal(err)
		}
		if f := features("retried"); f != driver.FeaturePriority {
			t.Fatalf("Features = %b once the job is retried; want priority", f)
		}
		plainTakesNothing("retried", 40)

		// Failed jobs retried by a range: a fair one takes a place again.
		fair := newJob(4, "range", 0)
		fair.FairKey = "tenant:1"
		insert(t, s, fair)
		j = reserve(t, s, "range", 10)
		if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "boom", At: 20}); !ok || err != nil {
			t.Fatalf("Fail = %v, %v", ok, err)
		}
		if n, _, err := s.RetryFailed(ctx, driver.FailedKey{}, driver.FailedKey{FailedAt: 1 << 60, ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}, 10, 30); n != 1 || err != nil {
			t.Fatalf("RetryFailed = %d, %v", n, err)
		}
		if f := features("range"); f != driver.FeatureFair {
			t.Fatalf("Features = %b once the fair job is retried; want fairness", f)
		}
		if f := lookup(t, s, 4); f.Job == nil || f.Job.FairSeq == 0 {
			t.Fatalf("the fair job retried by a range has no place: %+v", f.Job)
		}
		plainTakesNothing("range", 40)

		// A held job let in by its limit.
		first, second := limited(2, "held", 0, "account:9", 1), limited(3, "held", 0, "account:9", 1)
		second.RateKey, second.Rate = "api", driver.Rate{Max: 100, PerMs: 1000}
		insert(t, s, first, second)
		if f := features("held"); f != 0 {
			t.Fatalf("Features = %b with the limited job held; want none", f)
		}
		j = reserve(t, s, "held", 10)
		if j == nil || !strings.EqualFold(j.ID, first.ID) {
			t.Fatalf("reserved %s, want the first", j.ID)
		}
		if done, err := driver.CompleteOne(ctx, s, j, j.Attempts); !done || err != nil {
			t.Fatalf("Complete = %v, %v", done, err)
		}
		if f := features("held"); f != driver.FeatureRate {
			t.Fatalf("Features = %b once the held job is let in; want its rate limit", f)
		}
		plainTakesNothing("held", 40)

		// A flow's step released.
		b := newFlow(1, driver.KindChain, false).Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false, "a")
		b.NF.Steps[1].Job.FairKey = "tenant:1"
		b.Start(t, s)
		if f := features("f"); f != 0 {
			t.Fatalf("Features = %b with the fair step held; want none", f)
		}
		succeed(t, s, 50, "", b.Due(t, s, 50)["a"])
		if f := features("f"); f != driver.FeatureFair {
			t.Fatalf("Features = %b once the fair step is released; want fairness", f)
		}
		plainTakesNothing("f", 60)
	})
}

// TestARateLimitFollowsTheJob: a job's rate limit is kept when it fails
// (for its retry), while it is held by a concurrency limit, and while it
// is a flow's step waiting for another.
func TestARateLimitFollowsTheJob(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		rate := driver.Rate{Max: 5, PerMs: 1000}
		insert(t, s, rated(1, "r", 1, "api-f", rate))
		j := reserve(t, s, "r", t0)
		if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Attempt: 1, At: t0, Error: "boom"}); !ok || err != nil {
			t.Fatalf("Fail: %v, %v", ok, err)
		}
		if f := lookup(t, s, 1); f.Failed == nil || f.Failed.RateKey != "api-f" || f.Failed.Rate != rate {
			t.Fatalf("the failed job: %+v", f.Failed)
		}
		if err := s.Retry(ctx, j.ID, t0); err != nil {
			t.Fatal(err)
		}
		if f := lookup(t, s, 1); f.Job == nil || f.Job.RateKey != "api-f" || f.Job.Rate != rate {
			t.Fatalf("the retried job: %+v", f.Job)
		}

		first, second := limited(2, "h", 1, "account:1", 1), limited(3, "h", 2, "account:1", 1)
		first.RateKey, first.Rate, second.RateKey, second.Rate = "api-f", rate, "api-f", rate
		insert(t, s, first, second)
		j = reserve(t, s, "h", t0)
		if ok, err := driver.CompleteOne(ctx, s, j, j.Attempts); !ok || err != nil {
			t.Fatalf("Complete: %v, %v", ok, err)
		}
		if j := reserve(t, s, "h", t0); j == nil || j.RateKey != "api-f" || j.Rate != rate {
			t.Fatalf("the held job, admitted: %+v", j)
		}

		b := newFlow(1, driver.KindChain, true).Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false, "a")
		for _, st := range b.NF.Steps {
			st.Job.RateKey, st.Job.Rate = "api-f", rate
		}
		b.Start(t, s)
		a := reserve(t, s, "f", t0)
		if a == nil || a.RateKey != "api-f" {
			t.Fatalf("the flow's first step: %+v", a)
		}
		succeed(t, s, t0, `{}`, a)
		if j := reserve(t, s, "f", t0); j == nil || j.RateKey != "api-f" || j.Rate != rate {
			t.Fatalf("the flow's second step, released: %+v", j)
		}
	})
}

// TestABatchKeepsWhatEachJobCarries: a batch stored at once (COPY on
// PostgreSQL) keeps each job's priority, rate limit and fairness key
// (with a place), and gives the jobs without one the defaults, whichever
// features the batch holds.
func TestABatchKeepsWhatEachJobCarries(t *testing.T) {
	rate := driver.Rate{Max: 3, PerMs: 2000}
	plain := func(n int) *driver.Job { return newJob(n, "m", int64(n)) }
	urgent := func(n int) *driver.Job { j := plain(n); j.Priority = 5; return j }
	limited := func(n int) *driver.Job { j := plain(n); j.RateKey, j.Rate = "api-m", rate; return j }
	fair := func(n int) *driver.Job { j := plain(n); j.FairKey = "g"; return j }
	batches := map[string][]func(int) *driver.Job{
		"plain":                {plain, plain},
		"a priority":           {urgent, plain},
		"a rate limit":         {plain, limited},
		"a fairness key":       {fair, plain},
		"every feature":        {plain, urgent, limited, fair},
		"every feature in one": {func(n int) *driver.Job { j := limited(n); j.Priority, j.FairKey = -2, "g"; return j }, plain},
	}
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		n := 0
		for name, batch := range batches {
			jobs := make([]*driver.Job, len(batch))
			for i, job := range batch {
				n++
				jobs[i] = job(n)
			}
			if _, err := s.InsertMany(ctx, nil, jobs, 1); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, want := range jobs {
				f := lookup(t, s, int(want.AvailableAt))
				if f.Job == nil || f.Job.Priority != want.Priority || f.Job.RateKey != want.RateKey || f.Job.Rate != want.Rate ||
					f.Job.FairKey != want.FairKey || (f.Job.FairSeq > 0) != (want.FairKey != "") {
					t.Fatalf("%s: job %d stored as %+v; want priority %d, rate key %q at %v, fairness key %q with a place",
						name, want.AvailableAt, f.Job, want.Priority, want.RateKey, want.Rate, want.FairKey)
				}
			}
		}
	})
}

// TestAFairJobKeepsItsKeyWhereverItGoes: a failed job keeps its key, and
// its retry takes a new place; a job held by its concurrency limit takes
// its place as it is admitted; a released job keeps its place.
func TestAFairJobKeepsItsKeyWhereverItGoes(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, grouped(1, "a", 0, "g"), grouped(2, "a", 0, "g"))
		j := drivertest.Search(t, s, driver.FeatureFair, "a", 100, 1)[0]
		if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Attempt: 1, At: 100, Error: "boom"}); err != nil || !ok {
			t.Fatalf("Fail: %v, %v", ok, err)
		}
		if f := lookup(t, s, 1); f.Failed == nil || f.Failed.FairKey != "g" {
			t.Fatalf("the failed job: %+v, want its key g", f.Failed)
		}
		failed, err := s.Failed(ctx, driver.FailedKey{}, 10, false)
		if err != nil || len(failed) != 1 || failed[0].FairKey != "g" {
			t.Fatalf("Failed: %+v, %v", failed, err)
		}
		if err := s.Retry(ctx, j.ID, 200); err != nil {
			t.Fatal(err)
		}
		if f := lookup(t, s, 1); f.Job == nil || f.Job.FairKey != "g" || f.Job.FairSeq != 3 {
			t.Fatalf("the retried job: %+v, want key g at the group's next place, 3", f.Job)
		}
		r := drivertest.Search(t, s, driver.FeatureFair, "a", 300, 1)[0]
		if drivertest.Numbers([]*driver.Job{r}) != "2" {
			t.Fatalf("reserved %s, want 2, whose place is before the retry's", r.ID)
		}
		if ok, err := s.Release(ctx, r.ID, r.Attempts, 400, driver.Failure{Attempt: 1, At: 300, Error: "again"}); err != nil || !ok {
			t.Fatalf("Release: %v, %v", ok, err)
		}
		if f := lookup(t, s, 2); f.Job == nil || f.Job.FairSeq != 2 {
			t.Fatalf("the released job: %+v, want its place, 2", f.Job)
		}

		held := grouped(3, "b", 0, "h")
		held.LimitKey, held.LimitMax = "fair-limit", 1
		first := grouped(4, "b", 0, "h")
		first.LimitKey, first.LimitMax = "fair-limit", 1
		insert(t, s, first, held)
		if f := lookup(t, s, 3); f.Job == nil || !f.Job.Held || f.Job.FairKey != "h" {
			t.Fatalf("the held job: %+v", f.Job)
		}
		run := drivertest.Search(t, s, driver.FeatureFair, "b", 100, 10)
		if drivertest.Numbers(run) != "4" {
			t.Fatalf("reserved %s, want 4 alone", drivertest.Numbers(run))
		}
		if _, err := s.Complete(ctx, []driver.Attempt{{ID: run[0].ID, Attempt: 1, Limit: "fair-limit"}}, false); err != nil {
			t.Fatal(err)
		}
		if f := lookup(t, s, 3); f.Job == nil || f.Job.Held || f.Job.FairKey != "h" || f.Job.FairSeq != 2 {
			t.Fatalf("the admitted job: %+v, want key h at place 2", f.Job)
		}
	})
}

// TestAFairAndRatedReservationLeavesOutFullWindows: a group whose rate
// key's window is full waits; the others take their turns.
func TestAFairAndRatedReservationLeavesOutFullWindows(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 3; n++ {
			j := grouped(n, "a", 0, "busy")
			j.RateKey, j.Rate = "fair-rate", driver.Rate{Max: 1, PerMs: 60_000}
			insert(t, s, j)
		}
		insert(t, s, grouped(4, "a", 1, "calm"), grouped(5, "a", 1, "calm"))
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate | driver.FeatureFair, Queue: "a", Now: 100, At: 100, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := drivertest.Numbers(jobs); got != "1 4 5" {
			t.Fatalf("reserved %s, want 1 4 5: one of busy (its window then full), both of calm", got)
		}
		if f := lookup(t, s, 2); f.Job == nil || f.Job.Attempts != 0 || f.Job.ReservedAt != 0 {
			t.Fatalf("the job over its limit: %+v, want it waiting, no attempt spent", f.Job)
		}
	})
}
