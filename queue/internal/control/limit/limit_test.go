package limit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

func limited(n int, queue string, availableAt int64, key string, most int) *driver.Job {
	j := drivertest.Job(n, queue, availableAt)
	j.LimitKey, j.LimitMax = key, most
	return j
}

func heldOf(t *testing.T, s driver.Driver, queue string) int {
	t.Helper()
	stats, err := s.Stats(ctx, 100, 100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats {
		if st.Queue == queue {
			return st.Held
		}
	}
	return 0
}

// TestALimitHoldsTheJobsOverIt: at most LimitMax jobs of a key are in
// jobs; the others are held, in no reservation, while other keys and
// jobs without a limit run; each way a job of the key leaves (success,
// failure, cancel) lets the next in; a retried failed job, a held one
// cancelled and a released one keep to the rule; a purge takes held jobs
// too.
func TestALimitHoldsTheJobsOverIt(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		drivertest.Insert(t, s,
			limited(1, "a", 10, "account:1", 2),
			limited(2, "a", 20, "account:1", 2),
			limited(3, "a", 30, "account:1", 2),
			limited(4, "a", 40, "account:1", 2),
			limited(5, "a", 50, "account:1", 2),
			limited(6, "a", 60, "account:2", 2),
			drivertest.Job(7, "a", 70),
		)
		if n := drivertest.Pending(t, s, "a"); n != 7 {
			t.Fatalf("pending %d, want 7, the held jobs counted", n)
		}
		if n := heldOf(t, s, "a"); n != 3 {
			t.Fatalf("Stats: %d held, want 3", n)
		}
		jobs := drivertest.ReserveAll(t, s, "a", 100)
		if got := drivertest.Tails(jobs); got != "1 2 6 7" {
			t.Fatalf("reserved %s, want 1 2 6 7: two of account:1, the one of account:2, the one of no limit", got)
		}
		if jobs[0].LimitKey != "account:1" || jobs[0].LimitMax != 2 || jobs[3].LimitKey != "" {
			t.Fatalf("the reserved jobs do not read their limits: %+v", jobs[0])
		}
		if f := drivertest.Lookup(t, s, 3); f.Job == nil || !f.Job.Held || f.Job.LimitKey != "account:1" || string(f.Job.Payload) != `{"n":3}` {
			t.Fatalf("Lookup of a held job: %+v", f.Job)
		}
		if f := drivertest.Lookup(t, s, 1); f.Job == nil || f.Job.Held {
			t.Fatalf("Lookup of a running limited job: %+v", f.Job)
		}

		// A success lets the next in.
		if ok, err := driver.CompleteOne(ctx, s, jobs[0], jobs[0].Attempts); !ok || err != nil {
			t.Fatalf("Complete: %v, %v", ok, err)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 100)); got != "3" {
			t.Fatalf("after a success: reserved %q, want 3", got)
		}
		// So does a failure for good.
		if ok, err := s.Fail(ctx, jobs[1].ID, jobs[1].Attempts, driver.Failure{Attempt: 1, At: 90, Error: "boom", Limit: jobs[1].LimitKey}); !ok || err != nil {
			t.Fatalf("Fail: %v, %v", ok, err)
		}
		four := drivertest.ReserveAll(t, s, "a", 100)
		if got := drivertest.Tails(four); got != "4" {
			t.Fatalf("after a failure: reserved %q, want 4", got)
		}
		// A held job cancelled goes to the failed jobs with its limit.
		if did, err := s.Cancel(ctx, drivertest.Job(5, "", 0).ID, 95); did != driver.Removed || err != nil {
			t.Fatalf("Cancel of a held job: %v, %v", did, err)
		}
		if f := drivertest.Lookup(t, s, 5); f.Failed == nil || f.Failed.Error != driver.CancelledError || f.Failed.LimitKey != "account:1" || f.Failed.LimitMax != 2 {
			t.Fatalf("the cancelled held job: %+v", f)
		}
		if n := heldOf(t, s, "a"); n != 0 {
			t.Fatalf("Stats: %d held, want 0", n)
		}
		// A retry of a failed job while the key is full holds it.
		if err := s.Retry(ctx, jobs[1].ID, 100); err != nil {
			t.Fatal(err)
		}
		if f := drivertest.Lookup(t, s, 2); f.Job == nil || !f.Job.Held || len(f.Job.Errors) != 1 || f.Job.Errors[0].Error != "boom" {
			t.Fatalf("the retried job, key full: %+v", f.Job)
		}
		// A released job keeps its slot while it waits for its retry.
		if ok, err := s.Release(ctx, four[0].ID, four[0].Attempts, 1000, driver.Failure{Attempt: 1, At: 100, Error: "later"}); !ok || err != nil {
			t.Fatalf("Release: %v, %v", ok, err)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 100)); got != "" {
			t.Fatalf("reserved %q while the key is full of a running job and a released one", got)
		}
		// A retry of a range holds the cancelled job again, behind 2.
		if n, _, err := s.RetryFailed(ctx, driver.FailedKey{}, driver.FailedKey{FailedAt: 1 << 60, ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}, 10, 200); n != 1 || err != nil {
			t.Fatalf("RetryFailed: %d, %v", n, err)
		}
		if f := drivertest.Lookup(t, s, 5); f.Job == nil || !f.Job.Held {
			t.Fatalf("the cancelled job retried, key full: %+v", f)
		}
		// Job 3 succeeds: 2 goes in (it was due first), then 4 succeeds: 5.
		three := drivertest.Lookup(t, s, 3).Job
		if ok, err := driver.CompleteOne(ctx, s, three, three.Attempts); !ok || err != nil {
			t.Fatalf("Complete: %v, %v", ok, err)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 1000)); got != "2 4" {
			t.Fatalf("reserved %q, want 2 then the released 4", got)
		}
		if n := heldOf(t, s, "a"); n != 1 {
			t.Fatalf("Stats: %d held, want 1", n)
		}
		// A purge takes the held job too, and leaves nothing to admit.
		if n, err := s.Purge(ctx, "a"); n != 5 || err != nil {
			t.Fatalf("Purge = %d, %v; want 5: 2, 4, 5 (held), 6, 7", n, err)
		}
		if n := drivertest.Pending(t, s, "a"); n != 0 {
			t.Fatalf("pending %d after the purge", n)
		}
		// The key starts over.
		drivertest.Insert(t, s, limited(8, "a", 0, "account:1", 2), limited(9, "a", 0, "account:1", 2), limited(10, "a", 0, "account:1", 2))
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 100)); got != "8 9" {
			t.Fatalf("after the purge: reserved %q, want 8 9", got)
		}
	})
}

// TestAHeldJobGoesInByPriorityThenDueTime, and a key's limit is the held
// job's own: a dispatch with a higher limit lets in what it has room for.
func TestAHeldJobGoesInByPriorityThenDueTime(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		first := limited(1, "a", 0, "k", 1)
		j2, j3, j4 := limited(2, "a", 10, "k", 1), limited(3, "a", 20, "k", 1), limited(4, "a", 5, "k", 1)
		j3.Priority = 5
		drivertest.Insert(t, s, first, j2, j3, j4)
		var order []string
		for run := drivertest.Reserve(t, s, "a", 100); run != nil; run = drivertest.Reserve(t, s, "a", 100) {
			order = append(order, drivertest.Tails([]*driver.Job{run}))
			if ok, err := driver.CompleteOne(ctx, s, run, run.Attempts); !ok || err != nil {
				t.Fatalf("Complete: %v, %v", ok, err)
			}
		}
		if got := fmt.Sprint(order); got != "[1 3 4 2]" {
			t.Fatalf("ran %s, want [1 3 4 2]: the priority first, then by due time", got)
		}
		// Three held behind one running under a limit of 1; a job with a
		// limit of 3 goes behind them, and two of them go in with it.
		drivertest.Insert(t, s, limited(5, "a", 0, "k", 1), limited(6, "a", 1, "k", 1), limited(7, "a", 2, "k", 1))
		drivertest.Insert(t, s, limited(8, "a", 3, "k", 3))
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 100)); got != "5" {
			t.Fatalf("reserved %q, want 5 alone", got)
		}
		if n := heldOf(t, s, "a"); n != 3 {
			t.Fatalf("%d held, want 3", n)
		}
	})
}

// TestALimitHoldsUnderConcurrency: dispatchers and workers of several
// keys at once, on every driver (on PostgreSQL, transactions that race):
// no more than the limit of a key is ever running, batches of several
// keys complete without a deadlock, and every job runs once.
func TestALimitHoldsUnderConcurrency(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		const keys, perKey, most = 4, 30, 3
		var running [keys]atomic.Int32
		var worst atomic.Int32
		var ran sync.Map
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		// Each dispatcher goes round the keys, so that dispatches of a key
		// race each other and the completions that let its jobs in.
		for d := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perKey {
					n, k := 1000*(d+1)+i, (d+i)%keys
					var err error
					if i%3 == 0 { // some in a batch, keys in both orders
						_, err = s.InsertMany(ctx, nil, []*driver.Job{
							limited(n, "a", 0, fmt.Sprint("key:", k), most),
							limited(n+500, "a", 0, fmt.Sprint("key:", keys-1-k), most),
						}, 1)
					} else {
						_, _, err = s.Insert(ctx, nil, limited(n, "a", 0, fmt.Sprint("key:", k), most))
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		total := keys*perKey + keys*((perKey+2)/3)
		var done atomic.Int32
		keyOf := func(j *driver.Job) int { return int(j.LimitKey[len(j.LimitKey)-1] - '0') }
		// Each worker holds what it reserved until its next reservation
		// returns: the jobs of a key in jobs are then counted running.
		complete := func(jobs []*driver.Job) error {
			if len(jobs) == 0 {
				return nil
			}
			batch := make([]driver.Attempt, len(jobs))
			for i, j := range jobs {
				running[keyOf(j)].Add(-1)
				batch[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts, Limit: j.LimitKey}
			}
			ids, err := s.Complete(ctx, batch, false)
			if err != nil || len(ids) != len(batch) {
				return fmt.Errorf("complete %d: %v, %v", len(batch), ids, err)
			}
			done.Add(int32(len(ids)))
			return nil
		}
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var held []*driver.Job
				for done.Load()+int32(len(held)) < int32(total) {
					jobs, err := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: 100, At: 100, Limit: 4})
					if err != nil {
						errs <- err
						return
					}
					for _, j := range jobs {
						if r := running[keyOf(j)].Add(1); r > worst.Load() {
							worst.Store(r)
						}
						if _, again := ran.LoadOrStore(j.ID, true); again {
							errs <- fmt.Errorf("job %s ran twice", j.ID)
						}
					}
					if err := complete(held); err != nil {
						errs <- err
						return
					}
					held = jobs
				}
				if err := complete(held); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if w := worst.Load(); w > most {
			t.Fatalf("%d jobs of a key ran at once, over the limit of %d", w, most)
		}
		if n := drivertest.Pending(t, s, "a"); n != 0 || int(done.Load()) != total {
			t.Fatalf("%d ran of %d, %d pending", done.Load(), total, n)
		}
	})
}

// TestAHeldJobThatIsNotThereIsNoJob: Cancel and Lookup of an id held
// nowhere say so.
func TestAHeldJobThatIsNotThereIsNoJob(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		drivertest.Insert(t, s, limited(1, "a", 0, "k", 1), limited(2, "a", 0, "k", 1))
		if _, err := s.Lookup(ctx, drivertest.Job(3, "", 0).ID); !errors.Is(err, driver.ErrNoJob) {
			t.Fatalf("Lookup of no job: %v", err)
		}
		if _, err := s.Cancel(ctx, drivertest.Job(3, "", 0).ID, 1); !errors.Is(err, driver.ErrNoJob) {
			t.Fatalf("Cancel of no job: %v", err)
		}
		if got := drivertest.Tails(drivertest.ReserveAll(t, s, "a", 100)); !slices.Equal([]string{got}, []string{"1"}) {
			t.Fatalf("reserved %q, want 1", got)
		}
	})
}

// TestReadmitLetsInWhatAKeyHasRoomFor: a key left with room and jobs
// held (its job deleted by a build that let nothing in, as through a
// rolling deploy) gets them in from UpkeepHeld, as many as its limit has
// room for, due no earlier than now; a second UpkeepHeld finds nothing.
func TestReadmitLetsInWhatAKeyHasRoomFor(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		drivertest.Insert(t, s, limited(1, "a", 0, "k", 2), limited(2, "a", 0, "k", 2), limited(3, "a", 10, "k", 2),
			limited(4, "a", 20, "k", 2), limited(5, "a", 30, "k", 2), limited(6, "b", 0, "other", 1))
		if _, memory := s.(*memdriver.Driver); memory { // it never leaves a key with room and jobs held
			if n, err := s.Upkeep(ctx, driver.UpkeepHeld, 100, 0); n != 0 || err != nil {
				t.Fatalf("UpkeepHeld = %d, %v; want 0", n, err)
			}
			return
		}
		// An older build's completion: the row goes, nothing is let in.
		for _, n := range []int{1, 2} {
			q, err := d.Querier(ctx)
			if err == nil {
				_, err = q.ExecContext(ctx, "DELETE FROM jobs WHERE id = ?", drivertest.Job(n, "", 0).ID)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := heldOf(t, s, "a"); n != 3 {
			t.Fatalf("%d held before UpkeepHeld, want 3", n)
		}
		if n, err := s.Upkeep(ctx, driver.UpkeepHeld, 100, 0); n != 1 || err != nil {
			t.Fatalf("UpkeepHeld = %d, %v; want the one key with room", n, err)
		}
		for _, n := range []int{3, 4} {
			if f := drivertest.Lookup(t, s, n); f.Job == nil || f.Job.Held || f.Job.AvailableAt != 100 {
				t.Fatalf("job %d after UpkeepHeld: %+v; want let in, due at 100", n, f.Job)
			}
		}
		if f := drivertest.Lookup(t, s, 5); f.Job == nil || !f.Job.Held {
			t.Fatalf("job 5 after UpkeepHeld: %+v; want held, the key full", f.Job)
		}
		if n, err := s.Upkeep(ctx, driver.UpkeepHeld, 200, 0); n != 0 || err != nil {
			t.Fatalf("a second UpkeepHeld = %d, %v; want 0", n, err)
		}
	})
}
