package unique_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

func uniqueJob(n int, key string, until, now int64) *driver.Job {
	j := drivertest.Job(n, "a", now)
	j.UniqueKey, j.UniqueUntil, j.CreatedAt = key, until, now
	return j
}

func TestUniqueKeys(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		first := uniqueJob(1, "k", 0, 10)
		drivertest.Insert(t, s, first)
		id, inserted, err := s.Insert(ctx, nil, uniqueJob(2, "k", 0, 20))
		if err != nil || inserted || id != first.ID {
			t.Fatalf("a duplicate: %s, %v, %v; want the pending job's id", id, inserted, err)
		}
		// Reserved, then released for a retry: still pending, still unique.
		j := drivertest.Reserve(t, s, "a", 30)
		if id, _, _ := s.Insert(ctx, nil, uniqueJob(3, "k", 0, 30)); id != first.ID {
			t.Fatal("a running job lost its key")
		}
		s.Release(ctx, j.ID, j.Attempts, 40, driver.Failure{Error: "x"})
		if id, _, _ := s.Insert(ctx, nil, uniqueJob(3, "k", 0, 40)); id != first.ID {
			t.Fatal("a released job lost its key")
		}
		// Finished: the key is free.
		j = drivertest.Reserve(t, s, "a", 40)
		driver.CompleteOne(ctx, s, j, j.Attempts)
		if id, inserted, _ := s.Insert(ctx, nil, uniqueJob(4, "k", 0, 50)); !inserted || id == first.ID {
			t.Fatal("the key stayed taken after the job finished")
		}
		// Failed: the key is free too.
		j = drivertest.Reserve(t, s, "a", 50)
		s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "x", At: 60})
		if _, inserted, _ := s.Insert(ctx, nil, uniqueJob(5, "k", 0, 60)); !inserted {
			t.Fatal("a failed job kept its key")
		}
		// A window: unique until 100, then the next dispatch queues a new job.
		windowed := uniqueJob(6, "w", 100, 70)
		drivertest.Insert(t, s, windowed)
		if id, _, _ := s.Insert(ctx, nil, uniqueJob(7, "w", 199, 99)); id != windowed.ID {
			t.Fatal("inside its window the job was not unique")
		}
		id, inserted, err = s.Insert(ctx, nil, uniqueJob(8, "w", 200, 100))
		if err != nil || !inserted || id == windowed.ID {
			t.Fatalf("past the window: %s, %v, %v; want a new job", id, inserted, err)
		}
		if n := drivertest.Pending(t, s, "a"); n != 3 {
			t.Fatalf("PendingCount = %d, want 3 (job 5, job 6 past its window, job 8)", n)
		}
		if id, _, _ := s.Insert(ctx, nil, uniqueJob(9, "w", 300, 150)); id != drivertest.Job(8, "", 0).ID {
			t.Fatal("the new job does not hold the key")
		}
	})
}

// TestUniqueUnderConcurrency: 8 goroutines insert the same unique job at
// once; exactly one row results and everyone gets its id.
func TestUniqueUnderConcurrency(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		ids := make(chan string, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				id, _, err := s.Insert(ctx, nil, uniqueJob(i+1, "same", 0, 10))
				if err != nil {
					t.Error(err)
				}
				ids <- id
			})
		}
		wg.Wait()
		close(ids)
		seen := map[string]bool{}
		for id := range ids {
			seen[id] = true
		}
		if len(seen) != 1 || drivertest.Pending(t, s, "a") != 1 {
			t.Fatalf("8 concurrent dispatches gave ids %v and %d rows; want one job", seen, drivertest.Pending(t, s, "a"))
		}
	})
}

// TestInsertManyWithUniqueJobs: a batch of plain and unique jobs is
// stored together; a unique job whose key a pending job holds gives that
// job's id; a batch that fails stores none of its jobs.
func TestInsertManyWithUniqueJobs(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		held := drivertest.Job(1, "a", 0)
		held.UniqueKey = "k1"
		drivertest.Insert(t, s, held)
		again, fresh := drivertest.Job(2, "a", 0), drivertest.Job(3, "a", 0)
		again.UniqueKey, fresh.UniqueKey = "k1", "k2"
		ids, err := s.InsertMany(ctx, nil, []*driver.Job{drivertest.Job(4, "a", 0), again, fresh, drivertest.Job(5, "a", 0)}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{drivertest.Job(4, "", 0).ID, held.ID, fresh.ID, drivertest.Job(5, "", 0).ID}; !slices.Equal(ids, want) {
			t.Fatalf("ids %v, want %v", ids, want)
		}
		if n := drivertest.Pending(t, s, "a"); n != 4 {
			t.Fatalf("pending %d, want 4: the held job, the new unique one and two plain ones", n)
		}
		if _, isMemory := s.(*memdriver.Driver); isMemory {
			return // it cannot fail halfway
		}
		// The second of these has the id of a stored job: the batch fails, all of it.
		late := drivertest.Job(6, "a", 0)
		late.UniqueKey = "k3"
		if _, err := s.InsertMany(ctx, nil, []*driver.Job{late, drivertest.Job(4, "a", 0), drivertest.Job(7, "a", 0)}, 1); err == nil {
			t.Fatal("a batch with a duplicate id was stored")
		}
		if n := drivertest.Pending(t, s, "a"); n != 4 {
			t.Fatalf("pending %d after a failed batch, want 4", n)
		}
	})
}

func debounced(n int, key string, created, availableAt, maxMs int64) *driver.Job {
	j := drivertest.Job(n, "a", availableAt)
	j.CreatedAt, j.UniqueKey, j.DebounceMaxMs = created, "test.job|debounce:"+key, maxMs
	return j
}

// TestDebounceReplacesTheWaitingJob: a debounced dispatch replaces the
// waiting job of its key (its payload, and its due time up to the
// maximum wait from the first dispatch); once that job runs, the next
// dispatch stores a new one.
func TestDebounceReplacesTheWaitingJob(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		put := func(j *driver.Job) (string, bool) {
			t.Helper()
			id, inserted, err := s.Insert(ctx, nil, j)
			if err != nil {
				t.Fatal(err)
			}
			return id, inserted
		}
		first := debounced(1, "k", 0, 100, 500)
		if id, inserted := put(first); id != first.ID || !inserted {
			t.Fatalf("the first dispatch: %s, %v; want it stored", id, inserted)
		}
		if id, inserted := put(debounced(2, "k", 100, 200, 500)); id != first.ID || inserted {
			t.Fatalf("the second dispatch: %s, %v; want the first job's id, not stored", id, inserted)
		}
		if id, inserted := put(debounced(3, "other", 100, 200, 500)); id == first.ID || !inserted {
			t.Fatal("a dispatch of another key replaced the first")
		}
		put(debounced(4, "k", 450, 550, 500)) // due at 550, past the first's 0 + 500
		found, err := s.Lookup(ctx, first.ID)
		if err != nil || found.Job == nil || string(found.Job.Payload) != `{"n":4}` || found.Job.AvailableAt != 500 || found.Job.CreatedAt != 0 {
			t.Fatalf("the waiting job: %+v, %v; want the last payload, due at 500 (the maximum wait), created at 0", found.Job, err)
		}
		if n := drivertest.Pending(t, s, "a"); n != 2 {
			t.Fatalf("pending: %d; want 2 (one per key)", n)
		}
		if j := drivertest.Reserve(t, s, "a", 499); j == nil || j.ID == first.ID {
			t.Fatalf("at 499 reserved %+v; want the other key's job, not the first", j)
		}
		running := drivertest.Reserve(t, s, "a", 500)
		if running == nil || running.ID != first.ID || string(running.Payload) != `{"n":4}` {
			t.Fatalf("at 500 reserved %+v; want the first job with the last payload", running)
		}
		next := debounced(5, "k", 600, 700, 500)
		if id, inserted := put(next); id != next.ID || !inserted {
			t.Fatalf("a dispatch while the job runs: %s, %v; want a new job", id, inserted)
		}
		if id, inserted := put(debounced(6, "k", 650, 750, 500)); id != next.ID || inserted {
			t.Fatalf("then: %s, %v; want the new job replaced", id, inserted)
		}
		if ok, err := driver.CompleteOne(ctx, s, running, running.Attempts); !ok || err != nil {
			t.Fatalf("complete the running job: %v, %v", ok, err)
		}
		if j := drivertest.Reserve(t, s, "a", 750); j == nil || j.ID != next.ID || string(j.Payload) != `{"n":6}` {
			t.Fatalf("at 750 reserved %+v; want the new job with the last payload", j)
		}
	})
}
