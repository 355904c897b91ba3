package driver_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// The harness is drivertest's, shared with the features' folders.
var (
	queueSets    = drivertest.Sets
	migrated     = drivertest.Migrated
	each         = drivertest.Each
	newJob       = drivertest.Job
	insert       = drivertest.Insert
	reserve      = drivertest.Reserve
	tails        = drivertest.Tails
	reserveAll   = drivertest.ReserveAll
	lookup       = drivertest.Lookup
	pending      = drivertest.Pending
	newFlow      = drivertest.NewFlow
	succeed      = drivertest.Succeed
	fail         = drivertest.Fail
	lastID       = drivertest.LastID
	flowID       = drivertest.FlowID
	reservedOnce = drivertest.ReservedOnce
)

var ctx = context.Background()

func TestReserveOrderAndDelays(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s,
			newJob(1, "a", 30),
			newJob(2, "a", 10),
			newJob(4, "a", 20),
			newJob(3, "a", 20),  // same time as 4, smaller id
			newJob(5, "a", 500), // delayed past now
			newJob(6, "b", 0),   // another queue
		)
		var got []string
		for {
			j := reserve(t, s, "a", 100)
			if j == nil {
				break
			}
			if j.Attempts != 1 || j.ReservedAt != 100 {
				t.Fatalf("reserved %s with attempts %d at %d, want 1 at 100", j.ID, j.Attempts, j.ReservedAt)
			}
			got = append(got, j.ID[len(j.ID)-1:])
		}
		if fmt.Sprint(got) != "[2 3 4 1]" {
			t.Fatalf("reserved %v, want [2 3 4 1]: by available_at, then id; none delayed, none of another queue", got)
		}
		if j := reserve(t, s, "a", 499); j != nil {
			t.Fatalf("reserved a delayed job early: %s", j.ID)
		}
		if j := reserve(t, s, "a", 500); j == nil || j.Payload == nil || string(j.Payload) != `{"n":5}` {
			t.Fatalf("at its time the delayed job was not reserved whole: %+v", j)
		}
		if n := pending(t, s, "a"); n != 5 {
			t.Fatalf("PendingCount(a) = %d, want 5 (running jobs are pending)", n)
		}
		if n := pending(t, s, "b"); n != 1 {
			t.Fatalf("PendingCount(b) = %d, want 1", n)
		}
	})
}

func TestReservedJobKeepsEverything(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		j := newJob(1, "a", 5)
		j.UniqueKey, j.UniqueUntil, j.TimeoutMs, j.MaxAttempts, j.Backoff = "k", 99, 0, 7, backoff.Fixed(30*time.Second)
		insert(t, s, j)
		got := reserve(t, s, "a", 10)
		want := *j
		want.Attempts, want.ReservedAt = 1, 10
		if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("reserved\n%+v\nwant\n%+v", *got, want)
		}
	})
}

func TestCompletionIsFencedByTheAttempt(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, newJob(1, "a", 0))
		j := reserve(t, s, "a", 1)
		for _, op := range []func() (bool, error){
			func() (bool, error) { return driver.CompleteOne(ctx, s, j, j.Attempts+1) },
			func() (bool, error) { return s.Release(ctx, j.ID, j.Attempts+1, 0, driver.Failure{Error: "x"}) },
			func() (bool, error) { return s.Fail(ctx, j.ID, j.Attempts+1, driver.Failure{Error: "x", At: 2}) },
		} {
			if ok, err := op(); ok || err != nil {
				t.Fatalf("an operation with a stale attempt acted: %v, %v", ok, err)
			}
		}
		if n := pending(t, s, "a"); n != 1 {
			t.Fatalf("PendingCount = %d after stale operations, want 1", n)
		}
		if ok, err := driver.CompleteOne(ctx, s, j, j.Attempts); !ok || err != nil {
			t.Fatalf("Complete = %v, %v", ok, err)
		}
		if n := pending(t, s, "a"); n != 0 {
			t.Fatalf("PendingCount = %d after Complete, want 0", n)
		}
		if ok, _ := driver.CompleteOne(ctx, s, j, j.Attempts); ok {
			t.Fatal("Complete acted twice")
		}
	})
}

// TestSyncMakesCompletionsDurable: a completion may commit without
// waiting for the disk (PostgreSQL's does); once Sync returns, the
// server's log is on disk past it.
func TestSyncMakesCompletionsDurable(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		insert(t, s, newJob(1, "a", 0))
		j := reserve(t, s, "a", 1)
		if ok, err := driver.CompleteOne(ctx, s, j, j.Attempts); !ok || err != nil {
			t.Fatalf("Complete = %v, %v", ok, err)
		}
		var written string // where the log ends, the completion's commit included
		if d != nil && d.Dialect() == db.Postgres {
			if err := d.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&written); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		if written == "" {
			return
		}
		var durable bool
		if err := d.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn() >= ?::pg_lsn", written).Scan(&durable); err != nil {
			t.Fatal(err)
		}
		if !durable {
			t.Fatalf("after Sync the log is on disk only to before %s, the completion's commit", written)
		}
	})
}

func TestReleaseWaitsForTheBackoff(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, newJob(1, "a", 0))
		j := reserve(t, s, "a", 100)
		if ok, err := s.Release(ctx, j.ID, j.Attempts, 1100, driver.Failure{Error: "smtp refused the message"}); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if again := reserve(t, s, "a", 1099); again != nil {
			t.Fatal("a released job ran before its backoff passed")
		}
		again := reserve(t, s, "a", 1100)
		if again == nil || again.ID != j.ID || again.Attempts != 2 || again.LastError != "smtp refused the message" {
			t.Fatalf("after the backoff reserved %+v, want attempt 2 of %s", again, j.ID)
		}
	})
}

// TestFailedPages: failed jobs come in pages, oldest failure first (then
// by id), each page from where the one before ended, and without their
// payloads unless asked.
func TestFailedPages(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for i, at := range []int64{3000, 1000, 2000, 2000, 5000} {
			insert(t, s, newJob(i+1, "a", 0))
			j := reserve(t, s, "a", 10)
			if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "no", At: at}); !ok || err != nil {
				t.Fatalf("Fail = %v, %v", ok, err)
			}
		}
		var got [][]int
		var after driver.FailedKey
		for range 4 {
			page, err := s.Failed(ctx, after, 2, false)
			if err != nil {
				t.Fatal(err)
			}
			var ns []int
			for _, f := range page {
				var n int
				fmt.Sscanf(f.ID, "01900000-0000-7000-8000-%012d", &n)
				ns = append(ns, n)
				if len(f.Payload) != 0 {
					t.Fatalf("job %d came with its payload %q", n, f.Payload)
				}
				after = f.Key()
			}
			got = append(got, ns)
		}
		if want := [][]int{{2, 3}, {4, 1}, {5}, nil}; !slices.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Fatalf("pages %v, want %v", got, want)
		}
		if page, _ := s.Failed(ctx, driver.FailedKey{FailedAt: 2000, ID: newJob(3, "", 0).ID}, 10, true); len(page) != 3 || string(page[0].Payload) != `{"n":4}` {
			t.Fatalf("the page after job 3: %+v; want jobs 4, 1 and 5 with their payloads", page)
		}
	})
}

func TestFailRetryFlush(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, newJob(1, "a", 0), newJob(2, "b", 0), newJob(3, "a", 0))
		for i, q := range []string{"a", "b", "a"} {
			j := reserve(t, s, q, 10)
			if ok, err := s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: fmt.Sprintf("error %d\nsecond line", i+1), At: int64(1000 + i)}); !ok || err != nil {
				t.Fatalf("Fail = %v, %v", ok, err)
			}
		}
		if pending(t, s, "a")+pending(t, s, "b") != 0 {
			t.Fatal("failed jobs are still pending")
		}
		failed, err := s.Failed(ctx, driver.FailedKey{}, 100, true)
		if err != nil || len(failed) != 3 {
			t.Fatalf("Failed = %d jobs, %v; want 3", len(failed), err)
		}
		f := failed[0]
		if f.ID != newJob(1, "", 0).ID || f.Queue != "a" || f.Name != "test.job" || string(f.Payload) != `{"n":1}` ||
			f.Attempts != 1 || f.Error != "error 1\nsecond line" || f.FailedAt != 1000 || f.MaxAttempts != 3 || f.TimeoutMs != 60000 {
			t.Fatalf("first failed job %+v", f)
		}
		if err := s.Retry(ctx, "01900000-0000-7000-8000-999999999999", 2000); !errors.Is(err, driver.ErrNoFailedJob) {
			t.Fatalf("Retry of an unknown id: %v, want ErrNoFailedJob", err)
		}
		if err := s.Retry(ctx, f.ID, 2000); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		j := reserve(t, s, "a", 2000)
		if j == nil || j.ID != f.ID || j.Attempts != 1 || j.MaxAttempts != 3 || j.Backoff.String() != "exponential:1000:300000" {
			t.Fatalf("the retried job came back as %+v: want its id and options, attempts started over", j)
		}
		if n, _, err := s.RetryFailed(ctx, driver.FailedKey{}, driver.FailedKey{FailedAt: math.MaxInt64, ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}, 100, 2000); n != 2 || err != nil {
			t.Fatalf("RetryFailed of all = %d, %v; want 2", n, err)
		}
		if failed, _ := s.Failed(ctx, driver.FailedKey{}, 100, true); len(failed) != 0 {
			t.Fatalf("%d failed jobs left after retry all", len(failed))
		}
		if pending(t, s, "a") != 2 || pending(t, s, "b") != 1 {
			t.Fatal("retry all did not put every job back on its queue")
		}
		j = reserve(t, s, "b", 2000)
		_, _ = s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "again", At: 3000})
		if n, err := s.FlushFailed(ctx); n != 1 || err != nil {
			t.Fatalf("FlushFailed = %d, %v; want 1", n, err)
		}
		if n, _ := s.FlushFailed(ctx); n != 0 {
			t.Fatalf("a second flush deleted %d", n)
		}
	})
}

func TestInsertJoinsTheUnitOfWork(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, d *db.DB) {
		boom := errors.New("rolled back")
		err := d.Transaction(ctx, func(ctx context.Context) error {
			if _, _, err := s.Insert(ctx, db.UnitOfWorkFrom(ctx), newJob(1, "a", 0)); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || pending(t, s, "a") != 0 {
			t.Fatalf("a rolled back unit of work kept its job (%v)", err)
		}
		err = d.Transaction(ctx, func(ctx context.Context) error {
			if _, _, err := s.Insert(ctx, db.UnitOfWorkFrom(ctx), newJob(2, "a", 0)); err != nil {
				return err
			}
			// Others see the job only after the commit (a read beside the open transaction).
			if n := pending(t, s, "a"); n != 0 {
				t.Errorf("the job is visible before the commit (%d pending)", n)
			}
			return nil
		})
		if err != nil || pending(t, s, "a") != 1 {
			t.Fatalf("a committed unit of work lost its job (%v)", err)
		}
	})
}

func TestTakeOverStaleReservations(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		timed := newJob(1, "a", 0) // timeout 60 s: stale after 90 s
		unlimited := newJob(2, "a", 0)
		unlimited.TimeoutMs = 0 // no time limit: stale after a day
		insert(t, s, timed, unlimited)
		first := reserve(t, s, "a", 1000)
		second := reserve(t, s, "a", 1000)
		if first.ID != timed.ID || second.ID != unlimited.ID {
			t.Fatal("unexpected reservation order")
		}
		staleAt := func(queue string, now int64, want bool) {
			t.Helper()
			if got, err := s.Stale(ctx, queue, now); got != want || err != nil {
				t.Fatalf("Stale(%s, %d) = %v, %v; want %v, as TakeOver finds", queue, now, got, err, want)
			}
		}
		staleAt("a", 1000+90_000-1, false)
		if j, err := s.TakeOver(ctx, "a", 1000+90_000-1, ""); j != nil || err != nil {
			t.Fatalf("took over a reservation younger than its timeout plus 30 s: %+v, %v", j, err)
		}
		staleAt("a", 1000+90_000, true)
		staleAt("b", 1000+90_000, false)
		j, err := s.TakeOver(ctx, "a", 1000+90_000, "")
		if err != nil || j == nil || j.ID != timed.ID || j.Attempts != 2 || j.ReservedAt != 91_000 {
			t.Fatalf("TakeOver = %+v, %v; want attempt 2 of the timed job", j, err)
		}
		// The first worker is fenced out; the new attempt is the one that counts.
		if ok, _ := driver.CompleteOne(ctx, s, timed, 1); ok {
			t.Fatal("the first attempt completed a job that was taken over")
		}
		if ok, _ := s.Fail(ctx, timed.ID, 1, driver.Failure{Error: "late", At: 2}); ok {
			t.Fatal("the first attempt failed a job that was taken over")
		}
		if ok, _ := driver.CompleteOne(ctx, s, timed, 2); !ok {
			t.Fatal("the new attempt could not complete")
		}
		if j, _ := s.TakeOver(ctx, "b", 1000+86_400_000, ""); j != nil {
			t.Fatal("took over a job of another queue")
		}
		staleAt("a", 1000+86_400_000-1, false)
		if j, _ := s.TakeOver(ctx, "a", 1000+86_400_000-1, ""); j != nil {
			t.Fatalf("took over a job without a time limit before a day passed: %+v", j)
		}
		j, _ = s.TakeOver(ctx, "a", 1000+86_400_000, "")
		if j == nil || j.ID != unlimited.ID || j.Attempts != 2 {
			t.Fatalf("after a day TakeOver = %+v, want the job without a time limit", j)
		}
		if ok, _ := driver.CompleteOne(ctx, s, unlimited, 2); !ok {
			t.Fatal("the new attempt could not complete")
		}
		staleAt("a", 1000+86_400_000, false)
	})
}

// TestAGoneWorkersJobsAreTakenOverByHeartbeat: a job held by a registered
// worker is stale once that worker's heartbeat is its RescueMs old, or
// its row is gone (it stopped, or was forgotten), whatever the job's age
// or timeout; never while the worker beats, even a day on; and a beat
// returns its attempts that were taken over.
func TestAGoneWorkersJobsAreTakenOverByHeartbeat(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		const rescue = 3_600_000 // an hour: a day of beats is 25 of them
		w := driver.Worker{ID: "0193f2b0-0000-7000-8000-00000000000a", Kind: driver.KindWorker, Host: "h", PID: 1, Queues: []string{"a"},
			Concurrency: 2, Version: "v", StartedAt: 1, RescueMs: rescue}
		beat := func(at int64, running ...driver.Attempt) []driver.Attempt {
			t.Helper()
			b, err := s.Heartbeat(ctx, w, at, running)
			if err != nil || b.Restart {
				t.Fatal(b, err)
			}
			return b.Lost
		}
		staleAt := func(now int64, want bool) {
			t.Helper()
			if got, err := s.Stale(ctx, "a", now); got != want || err != nil {
				t.Fatalf("Stale(a, %d) = %v, %v; want %v", now, got, err, want)
			}
			stats, err := s.Stats(ctx, now, now, 100)
			if err != nil || len(stats) != 1 || (stats[0].Stale > 0) != want {
				t.Fatalf("Stats at %d = %+v, %v; want stale %v, as Stale says", now, stats, err, want)
			}
		}
		unlimited := newJob(1, "a", 0)
		unlimited.TimeoutMs = 0
		insert(t, s, unlimited, newJob(2, "a", 0))
		beat(1000)
		jobs, err := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: 1000, At: 1000, By: w.ID, Limit: 2})
		if err != nil || len(jobs) != 2 || jobs[0].ReservedBy != w.ID {
			t.Fatalf("Reserve = %+v, %v", jobs, err)
		}
		held := []driver.Attempt{{ID: jobs[0].ID, Attempt: 1}, {ID: jobs[1].ID, Attempt: 1}}
		// The worker beats for a day: its jobs are never stale, though
		// one's timeout plus 30 s passed long ago.
		for at := int64(6000); at <= 86_400_000+1000; at += rescue - 1000 {
			if lost := beat(at, held...); lost != nil {
				t.Fatalf("a beat at %d reported %v lost", at, lost)
			}
		}
		last := int64(86_400_000 + 1000 - (86_400_000+1000-6000)%(rescue-1000))
		staleAt(last+rescue-1, false)
		if j, _ := s.TakeOver(ctx, "a", last+rescue-1, ""); j != nil {
			t.Fatalf("took over a job of a worker alive: %+v", j)
		}
		infos, err := s.Jobs(ctx, driver.JobsQuery{State: driver.Running, Limit: 10})
		if err != nil || len(infos) != 2 || infos[0].ReservedBy != w.ID {
			t.Fatalf("Jobs(running) = %+v, %v; want both, held by %s", infos, err, w.ID)
		}
		// Its heartbeat stopped: the rescue time after the last one its jobs are
		// stale, the one without a time limit first (by reservation, then id).
		staleAt(last+rescue, true)
		taker := w
		taker.ID = "0193f2b0-0000-7000-8000-00000000000b"
		if _, err := s.Heartbeat(ctx, taker, last+rescue, nil); err != nil {
			t.Fatal(err)
		}
		j, err := s.TakeOver(ctx, "a", last+rescue, taker.ID)
		if err != nil || j == nil || j.ID != unlimited.ID || j.Attempts != 2 || j.ReservedBy != "0193f2b0-0000-7000-8000-00000000000b" {
			t.Fatalf("TakeOver = %+v, %v; want attempt 2 of job 1, held by the taker", j, err)
		}
		// A taker not registered: its reservation is judged by age.
		if j, _ := s.TakeOver(ctx, "a", last+rescue, ""); j == nil || j.ID != newJob(2, "a", 0).ID {
			t.Fatalf("the gone worker's second job was not taken over: %+v", j)
		}
		staleAt(last+rescue, false)
		// The gone worker comes back (a paused process resumed): its beat
		// reports both attempts lost, and they are fenced out.
		if lost := beat(last+rescue+5_000, held...); !slices.Equal(lost, held) {
			t.Fatalf("the beat after the takeovers reported %v lost; want %v", lost, held)
		}
		if ok, _ := driver.CompleteOne(ctx, s, unlimited, 1); ok {
			t.Fatal("the gone worker completed a job taken over")
		}
		// A job of a worker that deregistered is stale once YoungMs old.
		insert(t, s, newJob(3, "a", 0))
		if _, err := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: last + rescue + 5_000, At: last + rescue + 5_000, By: w.ID, Limit: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.Deregister(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Stale(ctx, "a", last+rescue+5_000+driver.YoungMs-1); ok {
			t.Fatal("a reservation younger than YoungMs is stale")
		}
		if j, _ := s.TakeOver(ctx, "a", last+rescue+5_000+driver.YoungMs, ""); j == nil || j.ID != newJob(3, "a", 0).ID {
			t.Fatalf("the job of a deregistered worker was not taken over: %+v", j)
		}
		// A released job holds no worker.
		if ok, err := s.Release(ctx, newJob(3, "a", 0).ID, 2, 0, driver.Failure{Error: "x"}); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if j := reserve(t, s, "a", last+rescue+15_000); j == nil || j.ReservedBy != "" {
			t.Fatalf("a job reserved by none after its release = %+v", j)
		}
	})
}

// TestARestartAsksTheWorkersRegisteredBeforeIt: Restart marks every
// registered worker not asked yet, returns them by when they started,
// and each learns it at its next beat, again at each beat after; a
// worker that registers after it is not asked, and a second Restart asks
// only it. The marks are listed with the workers.
func TestARestartAsksTheWorkersRegisteredBeforeIt(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		worker := func(n int, kind string, started int64) driver.Worker {
			return driver.Worker{ID: fmt.Sprintf("0193f2b0-0000-7000-8000-0000000001%02d", n), Kind: kind, Host: "h", PID: n,
				Version: "v", StartedAt: started, RescueMs: 15_000}
		}
		old, sched, late := worker(1, driver.KindWorker, 20), worker(2, driver.KindScheduler, 10), worker(3, driver.KindWorker, 30)
		beat := func(w driver.Worker, at int64, want bool) {
			t.Helper()
			b, err := s.Heartbeat(ctx, w, at, nil)
			if err != nil || b.Restart != want {
				t.Fatalf("a beat of %s says restart %v (%v); want %v", w.ID, b.Restart, err, want)
			}
		}
		ids := func(ws []driver.Worker) (out []string) {
			for _, w := range ws {
				out = append(out, w.ID)
			}
			return out
		}
		if asked, err := s.Restart(ctx, 500); len(asked) != 0 || err != nil {
			t.Fatalf("with no worker Restart asked %v (%v)", ids(asked), err)
		}
		beat(old, 1000, false)
		beat(sched, 1000, false)
		asked, err := s.Restart(ctx, 1500)
		if err != nil || !slices.Equal(ids(asked), []string{sched.ID, old.ID}) || asked[0].RestartAt != 1500 || asked[0].Kind != driver.KindScheduler {
			t.Fatalf("Restart asked %+v (%v); want the scheduler, then the worker, by when they started", asked, err)
		}
		beat(late, 2000, false)
		beat(old, 2000, true)
		beat(old, 3000, true)
		beat(sched, 2000, true)
		beat(late, 3000, false)
		listed, _, err := s.Workers(ctx, 3000)
		if err != nil || len(listed) != 3 || listed[0].RestartAt != 1500 || listed[1].RestartAt != 1500 || listed[2].RestartAt != 0 {
			t.Fatalf("Workers listed %+v (%v)", listed, err)
		}
		if asked, err := s.Restart(ctx, 4000); err != nil || !slices.Equal(ids(asked), []string{late.ID}) {
			t.Fatalf("the second Restart asked %v (%v); want the worker registered after the first alone", ids(asked), err)
		}
		beat(late, 5000, true)
	})
}

// TestBehindFindsWhatASearchFromACursorLeavesOut: a database driver's
// Behind reports a job due that a Reserve from `from` would leave out; the
// memory driver's Reserve leaves out none.
func TestBehindFindsWhatASearchFromACursorLeavesOut(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		_, memory := s.(*memdriver.Driver)
		behindAt := func(now, from int64, want bool) {
			t.Helper()
			want = want && !memory
			if got, err := s.Behind(ctx, "a", now, from, 0, nil); got != want || err != nil {
				t.Fatalf("Behind(now %d, from %d) = %v, %v; want %v", now, from, got, err, want)
			}
		}
		insert(t, s, newJob(1, "a", 500), newJob(2, "a", 1500), newJob(3, "b", 100))
		behindAt(2000, 1000, true) // job 1
		behindAt(2000, 500, false) // from its own time: a search finds it
		behindAt(400, 1000, false) // not due yet
		if memory {
			return
		}
		if jobs, err := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: 2000, At: 2000, From: 1000, Limit: 10}); err != nil || len(jobs) != 1 || jobs[0].ID != newJob(2, "a", 0).ID {
			t.Fatalf("Reserve from 1000 = %v, %v; want job 2 only", jobs, err)
		}
		behindAt(2000, 1000, true) // job 1 still waits behind the cursor
		reserve(t, s, "a", 2000)
		behindAt(2000, 1000, false) // a reserved job is not behind
	})
}

func TestUnreserveGivesTheJobBack(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		insert(t, s, newJob(1, "a", 0))
		j := reserve(t, s, "a", 10)
		if ok, _ := s.Unreserve(ctx, j.ID, j.Attempts+1); ok {
			t.Fatal("Unreserve with a stale attempt acted")
		}
		if ok, err := s.Unreserve(ctx, j.ID, j.Attempts); !ok || err != nil {
			t.Fatalf("Unreserve = %v, %v", ok, err)
		}
		again := reserve(t, s, "a", 20)
		if again == nil || again.ID != j.ID || again.Attempts != 1 {
			t.Fatalf("after Unreserve reserved %+v, want attempt 1 again", again)
		}
	})
}

// TestInterruptGivesTheAttemptBackAndKeepsIt: an interrupted attempt
// gives its number back, is kept among the job's errors as interrupted
// (the last error unchanged), and the job is due from when it ended, not
// from before it ran; a stale attempt does nothing.
func TestInterruptGivesTheAttemptBackAndKeepsIt(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		const w = "0193f2b0-0000-7000-8000-00000000000a"
		insert(t, s, newJob(1, "a", 0))
		j := reserve(t, s, "a", 10)
		released := driver.Failure{Attempt: 1, At: 20, Ms: 10, Worker: w, Error: "smtp: 451 try later"}
		if ok, err := s.Release(ctx, j.ID, 1, 30, released); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		j = reserve(t, s, "a", 40)
		interrupted := driver.Failure{Attempt: 2, At: 5040, Ms: 5000, Worker: w}
		if ok, _ := s.Interrupt(ctx, j.ID, j.Attempts+1, interrupted); ok {
			t.Fatal("Interrupt with a stale attempt acted")
		}
		if ok, err := s.Interrupt(ctx, j.ID, j.Attempts, interrupted); !ok || err != nil {
			t.Fatalf("Interrupt = %v, %v", ok, err)
		}
		found, err := s.Lookup(ctx, j.ID)
		interrupted.Interrupted = true
		if err != nil || found.Job == nil || found.Job.Attempts != 1 || found.Job.ReservedAt != 0 || found.Job.AvailableAt != 5040 ||
			found.Job.LastError != released.Error || !slices.Equal(found.Job.Errors, []driver.Failure{released, interrupted}) {
			t.Fatalf("Lookup of the interrupted job = %+v, %v; want it waiting from 5040, attempt 2 given back, its errors both", found.Job, err)
		}
		if early := reserve(t, s, "a", 5039); early != nil {
			t.Fatalf("reserved before it is due again: %+v", early)
		}
		again := reserve(t, s, "a", 5040)
		if again == nil || again.ID != j.ID || again.Attempts != 2 {
			t.Fatalf("after Interrupt reserved %+v, want attempt 2 again", again)
		}
	})
}

func TestReserveAndCompleteInBatches(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for i := range 10 {
			insert(t, s, newJob(i+1, "a", int64(100-i))) // later ids are due earlier
		}
		got, err := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: 1000, At: 1000, Limit: 4})
		if err != nil || len(got) != 4 {
			t.Fatalf("Reserve(limit 4) = %d jobs, %v", len(got), err)
		}
		var order []string
		for _, j := range got {
			order = append(order, j.ID[len(j.ID)-2:])
			if j.Attempts != 1 || j.ReservedAt != 1000 {
				t.Fatalf("reserved %+v", j)
			}
		}
		if fmt.Sprint(order) != "[10 09 08 07]" {
			t.Fatalf("reserved %v, want the 4 due first, in order", order)
		}
		rest, _ := s.Reserve(ctx, driver.Reservation{Queue: "a", Now: 1000, At: 1000, Limit: 100})
		if len(rest) != 6 {
			t.Fatalf("the rest: %d jobs, want 6", len(rest))
		}
		// Complete a batch in which two reservations are stale.
		done := []driver.Attempt{{ID: got[0].ID, Attempt: 1}, {ID: got[1].ID, Attempt: 2}, {ID: got[2].ID, Attempt: 1},
			{ID: "01900000-0000-7000-8000-999999999999", Attempt: 1}}
		ids, err := s.Complete(ctx, done, false)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		if fmt.Sprint(ids) != fmt.Sprint([]string{got[2].ID, got[0].ID}) {
			t.Fatalf("Complete deleted %v, want only the current reservations %s and %s", ids, got[0].ID, got[2].ID)
		}
		if n := pending(t, s, "a"); n != 8 {
			t.Fatalf("pending %d, want 8", n)
		}
	})
}

// TestConcurrentBatchReservationsNeverOverlap: four reservers take batches
// of 7 from 500 jobs at once; every job is reserved exactly once.
func TestConcurrentBatchReservationsNeverOverlap(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		var jobs []*driver.Job
		for i := range 500 {
			jobs = append(jobs, newJob(i+1, "a", 0))
		}
		if _, err := s.InsertMany(ctx, nil, jobs, 1); err != nil {
			t.Fatal(err)
		}
		reservedOnce(t, s, driver.Reservation{Queue: "a", Now: 10, At: 10, Limit: 7}, 500)
	})
}

// TestRetryFailedMovesABatchOfARange: failed jobs after one key and up to
// another, oldest failure first, a batch at a time, each reporting its
// last key; those past the range stay failed.
func TestRetryFailedMovesABatchOfARange(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		var keys []driver.FailedKey
		for n, failedAt := range []int64{500, 100, 300, 300, 200, 900, 700} {
			j := newJob(n+1, "a", 0)
			insert(t, s, j)
			r := reserve(t, s, "a", 10)
			if _, err := s.Fail(ctx, r.ID, r.Attempts, driver.Failure{Error: "no", At: failedAt}); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, driver.FailedKey{FailedAt: failedAt, ID: r.ID})
		}
		slices.SortFunc(keys, func(a, b driver.FailedKey) int {
			return cmp.Or(cmp.Compare(a.FailedAt, b.FailedAt), cmp.Compare(a.ID, b.ID))
		})
		upTo := keys[4] // the five oldest failures: 100, 200, 300, 300, 500
		after := driver.FailedKey{}
		for i, want := range []int{3, 2, 0} {
			n, last, err := s.RetryFailed(ctx, after, upTo, 3, 2000)
			if err != nil || n != want {
				t.Fatalf("batch %d: RetryFailed = %d, %v; want %d", i, n, err, want)
			}
			if wantLast := map[int]driver.FailedKey{0: keys[2], 1: keys[4], 2: keys[4]}[i]; last != wantLast {
				t.Fatalf("batch %d ended at %+v, want %+v", i, last, wantLast)
			}
			after = last
		}
		failed, err := s.Failed(ctx, driver.FailedKey{}, 100, false)
		if err != nil || len(failed) != 2 || failed[0].Key() != keys[5] || failed[1].Key() != keys[6] {
			t.Fatalf("left failed: %+v, %v; want the two failures after the range", failed, err)
		}
		if pending(t, s, "a") != 5 {
			t.Fatalf("%d jobs back on the queue, want 5", pending(t, s, "a"))
		}
	})
}

// TestPausesAreKept: a pause is kept until its resume, once however often
// it is made; the pause of every queue is one more row, and resuming every
// queue removes each pause.
func TestPausesAreKept(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		paused := func() []string {
			t.Helper()
			list, err := s.Paused(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return list
		}
		if list := paused(); len(list) != 0 {
			t.Fatalf("paused at first: %v", list)
		}
		for _, queue := range []string{"mail", "mail", driver.AllQueues, "default"} {
			if err := s.Pause(ctx, queue, 1000); err != nil {
				t.Fatalf("Pause(%s): %v", queue, err)
			}
		}
		if list := paused(); !slices.Equal(list, []string{"*", "default", "mail"}) {
			t.Fatalf("paused: %v", list)
		}
		for _, tt := range []struct {
			queue string
			was   bool
		}{{"mail", true}, {"mail", false}, {"sync", false}} {
			if was, err := s.Resume(ctx, tt.queue); was != tt.was || err != nil {
				t.Fatalf("Resume(%s) = %v, %v; want %v", tt.queue, was, err, tt.was)
			}
		}
		if was, err := s.Resume(ctx, driver.AllQueues); !was || err != nil {
			t.Fatalf("Resume(every queue) = %v, %v", was, err)
		}
		if list := paused(); len(list) != 0 {
			t.Fatalf("paused after resuming every queue: %v", list)
		}
		if was, _ := s.Resume(ctx, driver.AllQueues); was {
			t.Fatal("resuming every queue again found a pause")
		}
	})
}

// TestCancel: a waiting or delayed job becomes a failed job, "cancelled";
// a running one gets a request its worker reads; an id that is neither
// is ErrNoJob; requests of jobs no longer running are forgotten.
func TestCancel(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		waiting, delayed, running, done := newJob(1, "a", 0), newJob(2, "a", 5000), newJob(3, "b", 0), newJob(4, "c", 0)
		insert(t, s, waiting, delayed, running, done)
		r := reserve(t, s, "b", 10)
		d := reserve(t, s, "c", 10)
		for _, tt := range []struct {
			id   string
			want driver.Cancelled
		}{{waiting.ID, driver.Removed}, {delayed.ID, driver.Removed}, {r.ID, driver.Signalled}, {r.ID, driver.Signalled}} {
			if did, err := s.Cancel(ctx, tt.id, 2000); did != tt.want || err != nil {
				t.Fatalf("Cancel(%s) = %v, %v; want %v", tt.id, did, err, tt.want)
			}
		}
		failed, err := s.Failed(ctx, driver.FailedKey{}, 10, true)
		if err != nil || len(failed) != 2 || failed[0].Error != "cancelled" || failed[0].FailedAt != 2000 || string(failed[0].Payload) != `{"n":1}` || failed[0].Attempts != 0 {
			t.Fatalf("failed jobs after cancelling two waiting: %+v, %v", failed, err)
		}
		if pending(t, s, "a") != 0 {
			t.Fatal("a cancelled job is still pending")
		}
		if ids, err := s.CancelRequested(ctx, []string{r.ID, d.ID}); err != nil || !slices.Equal(ids, []string{r.ID}) {
			t.Fatalf("CancelRequested = %v, %v; want the running job cancelled", ids, err)
		}
		if ok, err := driver.CompleteOne(ctx, s, d, d.Attempts); !ok || err != nil {
			t.Fatalf("Complete: %v, %v", ok, err)
		}
		for _, id := range []string{d.ID, "01900000-0000-7000-8000-999999999999"} {
			if _, err := s.Cancel(ctx, id, 2000); !errors.Is(err, driver.ErrNoJob) {
				t.Fatalf("Cancel(%s), finished or unknown: %v, want ErrNoJob", id, err)
			}
		}
		if err := s.ForgetCancel(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		if ids, _ := s.CancelRequested(ctx, []string{r.ID}); len(ids) != 0 {
			t.Fatalf("a forgotten request is still there: %v", ids)
		}
		// A request whose job finished without it is forgotten by the next cancel.
		if _, err := s.Cancel(ctx, r.ID, 2000); err != nil {
			t.Fatal(err)
		}
		if ok, err := driver.CompleteOne(ctx, s, r, r.Attempts); !ok || err != nil {
			t.Fatalf("Complete: %v, %v", ok, err)
		}
		insert(t, s, newJob(5, "b", 0))
		again := reserve(t, s, "b", 10)
		if _, err := s.Cancel(ctx, "01900000-0000-7000-8000-999999999999", 2000); !errors.Is(err, driver.ErrNoJob) {
			t.Fatal(err)
		}
		if ids, _ := s.CancelRequested(ctx, []string{r.ID, again.ID}); len(ids) != 0 {
			t.Fatalf("requests left of finished jobs: %v", ids)
		}
	})
}

// TestUnknownCountsTheFirstWaitingJobsOfUnknownTypes: Unknown counts by
// type the waiting and delayed jobs of a queue whose type is not known,
// among its first limit in due order; reserved jobs and other queues do
// not count.
func TestUnknownCountsTheFirstWaitingJobsOfUnknownTypes(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n, name := range []string{"a.known", "z.gone", "z.gone", "b.gone", "z.gone", "z.gone"} {
			j := newJob(700+n, "unknown-q", int64(1000+n))
			j.Name = name
			insert(t, s, j)
		}
		other := newJob(720, "unknown-other", 1000)
		other.Name = "z.gone"
		insert(t, s, other)
		if got, err := s.Unknown(ctx, "unknown-q", []string{"a.known"}, 100); err != nil || !maps.Equal(got, map[string]int{"z.gone": 4, "b.gone": 1}) {
			t.Fatalf("Unknown = %v, %v", got, err)
		}
		if got, err := s.Unknown(ctx, "unknown-q", nil, 3); err != nil || !maps.Equal(got, map[string]int{"a.known": 1, "z.gone": 2}) {
			t.Fatalf("Unknown of the first 3, none known = %v, %v", got, err)
		}
		if _, err := s.Reserve(ctx, driver.Reservation{Queue: "unknown-q", Now: 1001, Limit: 2}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Unknown(ctx, "unknown-q", []string{"a.known"}, 100); err != nil || !maps.Equal(got, map[string]int{"z.gone": 3, "b.gone": 1}) {
			t.Fatalf("Unknown once the first two are reserved = %v, %v", got, err)
		}
	})
}

// TestAReservationOnlyOfSomeTypesLeavesTheOthers: with Only, each shape
// of search (by due time, by priority, rated, fair) takes only the jobs
// of those types, in its order, and Behind looks only for them; the
// others wait for a reservation without it.
func TestAReservationOnlyOfSomeTypesLeavesTheOthers(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		known := driver.NewNames([]string{"a.known", "c.it's"})
		shapes := []struct {
			queue string
			r     driver.Reservation
			set   func(n int, j *driver.Job)
		}{
			{"only-plain", driver.Reservation{}, func(int, *driver.Job) {}},
			{"only-prio", driver.Reservation{Features: driver.FeaturePriority}, func(n int, j *driver.Job) { j.Priority = []int{5, 3, 0, 0, -1}[n] }},
			{"only-rated", driver.Reservation{Features: driver.FeatureRate}, func(n int, j *driver.Job) { j.RateKey, j.Rate = "only-r", driver.Rate{Max: 100, PerMs: 60_000} }},
			{"only-fair", driver.Reservation{Features: driver.FeatureFair}, func(n int, j *driver.Job) { j.FairKey = []string{"g1", "g2"}[n%2] }},
		}
		for si, sh := range shapes {
			var want []string
			for n, name := range []string{"b.unknown", "a.known", "b.unknown", "c.it's", "a.known"} {
				j := newJob(800+10*si+n, sh.queue, int64(1000+n))
				j.Name = name
				sh.set(n, j)
				insert(t, s, j)
				if name != "b.unknown" {
					want = append(want, j.ID)
				}
			}
			r := sh.r
			r.Queue, r.Now, r.At, r.Limit, r.Only = sh.queue, 2000, 2000, 10, known
			got, err := s.Reserve(ctx, r)
			var ids []string
			for _, j := range got {
				ids = append(ids, j.ID)
			}
			slices.Sort(ids)
			if err != nil || !slices.Equal(ids, want) {
				t.Fatalf("%s: reserved %v (%v); want the known ones %v", sh.queue, ids, err, want)
			}
			if _, memory := s.(*memdriver.Driver); sh.queue == "only-plain" && !memory {
				for _, only := range []*driver.Names{known, nil} {
					if behind, err := s.Behind(ctx, sh.queue, 2000, 1500, 0, only); err != nil || behind != (only == nil) {
						t.Fatalf("Behind with only %v = %v, %v; want a job of an unknown type behind only without it", only, behind, err)
					}
				}
			}
			r.Only = nil
			if rest, err := s.Reserve(ctx, r); err != nil || len(rest) != 2 || rest[0].Name != "b.unknown" || rest[1].Name != "b.unknown" {
				t.Fatalf("%s: the others left %+v (%v); want the two of the unknown type", sh.queue, rest, err)
			}
		}
	})
}
