package rate_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/dbdriver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

// windowSlices is rate.Slices, for the tests that name a limit rate.
const windowSlices = rate.Slices

func rated(n int, queue string, availableAt int64, key string, r driver.Rate) *driver.Job {
	j := drivertest.Job(n, queue, availableAt)
	j.RateKey, j.Rate = key, r
	return j
}

// t0 is a time on the clock of reservations, far from 0 (the driver's
// own clock).
const t0 = 1_000_000

// reserveRated reserves up to limit jobs of queue at at as a worker does
// when rated jobs may wait, and returns them with how long until a full
// window reopens.
func reserveRated(t *testing.T, s driver.Driver, queue string, at int64, limit int, queueRate driver.Rate) ([]*driver.Job, int64) {
	t.Helper()
	m := driver.Marks{Rate: queueRate, ReopensIn: -1}
	jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeaturePriority | driver.FeatureRate, Queue: queue, Now: at, At: at, Limit: limit, Marks: &m})
	if err != nil {
		t.Fatal(err)
	}
	return jobs, m.ReopensIn
}

func throttled(t *testing.T, s driver.Driver, at int64) map[string]driver.Throttle {
	t.Helper()
	list, err := s.Throttles(ctx, "", at)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]driver.Throttle{}
	for _, th := range list {
		out[th.Key] = th
	}
	return out
}

// The tests' keys differ: on PostgreSQL the tests share a database, and
// a key's lock (an advisory lock) with it.

// TestARateLimitKeepsTheJobsOverItWaiting: of a key's jobs, no more
// start in a window than its rate allows; the others wait, never
// reserved, their attempts unspent, while jobs of other keys and of none
// run; the reservation says when the first full window reopens, and
// then the next start; Throttles lists the full windows; Meter counts
// against the same windows; a pruned window is an open one.
func TestARateLimitKeepsTheJobsOverItWaiting(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		api, other := driver.Rate{Max: 2, PerMs: 1000}, driver.Rate{Max: 1, PerMs: 1000}
		drivertest.Insert(t, s,
			rated(1, "a", 10, "api", api),
			rated(2, "a", 20, "api", api),
			rated(3, "a", 30, "api", api),
			rated(4, "a", 40, "api", api),
			drivertest.Job(5, "a", 50),
			rated(6, "a", 60, "other", other),
			rated(7, "a", 70, "other", other),
		)
		if _, mem := s.(*memdriver.Driver); !mem {
			if f, err := s.Features(ctx, "a", true); f != driver.FeatureRate || err != nil {
				t.Fatalf("Features(a) = %b, %v; want rate limits", f, err)
			}
			if f, err := s.Features(ctx, "b", true); f != 0 || err != nil {
				t.Fatalf("Features(b) = %b, %v; want none", f, err)
			}
		}
		jobs, in := reserveRated(t, s, "a", t0, 100, driver.Rate{})
		if got := drivertest.Tails(jobs); got != "1 2 5 6" {
			t.Fatalf("reserved %s, want 1 2 5 6: two of api, the one of no limit, one of other", got)
		}
		if jobs[0].RateKey != "api" || jobs[0].Rate != api || jobs[2].RateKey != "" {
			t.Fatalf("the reserved jobs do not read their rate limits: %+v", jobs[0])
		}
		if in <= 0 || in > 1000+1000/windowSlices+1 {
			t.Fatalf("ReopensIn = %d, want within a window and a slice", in)
		}
		for _, n := range []int{3, 4, 7} {
			if f := drivertest.Lookup(t, s, n); f.Job == nil || f.Job.Attempts != 0 || f.Job.ReservedAt != 0 {
				t.Fatalf("job %d, over its limit: %+v; want waiting, no attempt spent", n, f.Job)
			}
		}
		if list, err := s.Throttles(ctx, "b", t0); err != nil || len(list) != 0 {
			t.Fatalf("Throttles of a queue where no job of a full window waits = %+v, %v", list, err)
		}
		if list, err := s.Throttles(ctx, "a", t0); err != nil || len(list) != 2 {
			t.Fatalf("Throttles of the queue where they wait = %+v, %v", list, err)
		}
		th := throttled(t, s, t0)
		if len(th) != 2 || th["api"].Rate != api || th["api"].Reopens != t0+in || th["other"].Rate != other {
			t.Fatalf("Throttles = %+v; want api and other, reopening in %d ms", th, in)
		}
		if wait, err := s.Meter(ctx, "api", api, t0); err != nil || wait != in {
			t.Fatalf("Meter of a full window = %d, %v; want the wait until it reopens, %d", wait, err, in)
		}
		if jobs, _ := reserveRated(t, s, "a", t0+in-1, 100, driver.Rate{}); len(jobs) != 0 {
			t.Fatalf("a millisecond before the windows reopen, reserved %s", drivertest.Tails(jobs))
		}
		jobs, _ = reserveRated(t, s, "a", t0+in, 100, driver.Rate{})
		if got := drivertest.Tails(jobs); got != "3 4 7" {
			t.Fatalf("once the windows reopen, reserved %s, want 3 4 7", got)
		}
		if reopens, err := s.Meter(ctx, "fresh", api, t0+in); err != nil || reopens != 0 {
			t.Fatalf("Meter of an empty window = %d, %v; want 0, taken", reopens, err)
		}
		if _, err := s.Upkeep(ctx, driver.UpkeepRates, 0, t0+in+2100); err != nil {
			t.Fatal(err)
		}
		if th := throttled(t, s, t0+in); len(th) != 0 {
			t.Fatalf("after pruning the empty windows, Throttles = %+v", th)
		}
		if reopens, err := s.Meter(ctx, "api", api, t0+in+2100); err != nil || reopens != 0 {
			t.Fatalf("Meter once the window emptied = %d, %v; want 0", reopens, err)
		}
	})
}

// TestATakeOverTakesRoomInItsWindow: a job taken over from a dead
// worker starts again, so it takes room in its rate limit's window in
// the takeover's transaction; with its window full it is given back to
// wait instead (its dead attempt counted, no new one spent) and the
// takeover goes on to the next stale job.
func TestATakeOverTakesRoomInItsWindow(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		one, two := driver.Rate{Max: 1, PerMs: 3_600_000}, driver.Rate{Max: 2, PerMs: 3_600_000}
		drivertest.Insert(t, s, rated(1, "r", 10, "restart-one", one), drivertest.Job(2, "r", 20), rated(3, "r", 30, "restart-two", two))
		if jobs, _ := reserveRated(t, s, "r", t0, 10, driver.Rate{}); drivertest.Tails(jobs) != "1 2 3" {
			t.Fatalf("reserved %s, want 1 2 3", drivertest.Tails(jobs))
		}
		// The worker dies; its reservations go stale (timeout and grace).
		stale := int64(t0 + 60_000 + driver.GraceMs)
		var taken []*driver.Job
		for {
			j, err := s.TakeOver(ctx, "r", stale, "")
			if err != nil {
				t.Fatal(err)
			}
			if j == nil {
				break
			}
			taken = append(taken, j)
		}
		if got := drivertest.Tails(taken); got != "2 3" {
			t.Fatalf("taken over %s; want 2 and 3: 1's window is full", got)
		}
		for _, j := range taken {
			if j.Attempts != 2 || j.ReservedAt != stale {
				t.Fatalf("job taken over: %+v; want its second attempt, reserved at %d", j, stale)
			}
		}
		if f := drivertest.Lookup(t, s, 1); f.Job == nil || f.Job.ReservedAt != 0 || f.Job.Attempts != 1 {
			t.Fatalf("job 1, its window full: %+v; want waiting, its dead attempt counted", f.Job)
		}
		if wait, err := s.Meter(ctx, "restart-two", two, stale); err != nil || wait <= 0 {
			t.Fatalf("Meter of restart-two after its job's restart = %d, %v; want full: the restart took room", wait, err)
		}
		if jobs, _ := reserveRated(t, s, "r", stale, 10, driver.Rate{}); len(jobs) != 0 {
			t.Fatalf("reserved %s while job 1's window is full", drivertest.Tails(jobs))
		}
		in, err := s.Meter(ctx, "restart-one", one, stale)
		if err != nil || in <= 0 {
			t.Fatalf("Meter of restart-one = %d, %v; want full", in, err)
		}
		jobs, _ := reserveRated(t, s, "r", stale+in, 10, driver.Rate{})
		if drivertest.Tails(jobs) != "1" || jobs[0].Attempts != 2 {
			t.Fatalf("once its window reopens, reserved %+v; want job 1 on its second attempt", jobs)
		}
	})
}

// TestAQueueRateLimitsTheQueue: a reservation with a QueueRate takes no
// more than the queue's window has room for, and says when it reopens.
func TestAQueueRateLimitsTheQueue(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		for n := 1; n <= 5; n++ {
			drivertest.Insert(t, s, drivertest.Job(n, "q", int64(n)))
		}
		rate := driver.Rate{Max: 2, PerMs: 1000}
		jobs, _ := reserveRated(t, s, "q", t0, 10, rate)
		if got := drivertest.Tails(jobs); got != "1 2" {
			t.Fatalf("reserved %s, want 1 2", got)
		}
		jobs, in := reserveRated(t, s, "q", t0+500, 10, rate)
		if len(jobs) != 0 || in < 500 || in > 500+1000/windowSlices+1 {
			t.Fatalf("with the queue's window full: reserved %s, reopens in %d", drivertest.Tails(jobs), in)
		}
		if th := throttled(t, s, t0+500); th[driver.QueueKey("q")].Rate != rate {
			t.Fatalf("Throttles = %+v; want the queue's key", th)
		}
		jobs, _ = reserveRated(t, s, "q", t0+500+in, 10, rate)
		if got := drivertest.Tails(jobs); got != "3 4" {
			t.Fatalf("once it reopens, reserved %s, want 3 4", got)
		}
	})
}

// TestARateLimitHoldsAcrossConcurrentReservations: reservations at once
// from many connections never start more than the window allows, and
// what they leave is there for the next.
func TestARateLimitHoldsAcrossConcurrentReservations(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		rate := driver.Rate{Max: 10, PerMs: 60_000}
		for n := 1; n <= 60; n++ {
			drivertest.Insert(t, s, rated(n, "c", int64(n), "api-c", rate))
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		total := 0
		for range 8 {
			wg.Go(func() {
				for range 3 {
					jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "c", Now: t0, At: t0, Limit: 3})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					total += len(jobs)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if total > 10 {
			t.Fatalf("concurrent reservations started %d jobs of a limit of 10 a minute", total)
		}
		jobs, _ := reserveRated(t, s, "c", t0, 100, driver.Rate{})
		if total+len(jobs) != 10 {
			t.Fatalf("started %d concurrently and %d after, want 10 in all", total, len(jobs))
		}
	})
}

// TestARateLimitOnTheDriversOwnClock: a reservation at 0 (the driver's
// own clock: on PostgreSQL the server's) keeps the windows on that clock,
// and says how long until they reopen.
func TestARateLimitOnTheDriversOwnClock(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		rate := driver.Rate{Max: 1, PerMs: 3_600_000}
		drivertest.Insert(t, s, rated(1, "z", 1, "api-z", rate), rated(2, "z", 2, "api-z", rate))
		var m driver.Marks
		jobs, err := s.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "z", Now: 1 << 50, Limit: 10, Marks: &m})
		if err != nil || drivertest.Tails(jobs) != "1" || jobs[0].ReservedAt < 1_700_000_000_000 {
			t.Fatalf("Reserve: %s, %v; want job 1, reserved on the clock", drivertest.Tails(jobs), err)
		}
		if in := m.ReopensIn; in < 3_600_000-1000 || in > 3_600_000+3_600_000/windowSlices {
			t.Fatalf("ReopensIn = %d; want about an hour", in)
		}
		if wait, err := s.Meter(ctx, "api-z", rate, 0); err != nil || wait < 3_600_000-1000 {
			t.Fatalf("Meter = %d, %v; want about an hour", wait, err)
		}
		if th, err := s.Throttles(ctx, "z", 0); err != nil || len(th) != 1 || th[0].Reopens-jobs[0].ReservedAt < 3_600_000 {
			t.Fatalf("Throttles = %+v, %v", th, err)
		}
	})
}

// TestPruningWindowsNeverWaitsForAReservation: on PostgreSQL the prune
// of empty windows leaves the rows a transaction holds (a reservation
// writing their windows) and deletes the others, without waiting: a
// prune that waited for the rows it deletes, in its order, deadlocked
// with a reservation writing them in its own (seen in queue:bench).
func TestPruningWindowsNeverWaitsForAReservation(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	d := drivertest.Migrated(t, url)
	s := dbdriver.New(d)
	rate := driver.Rate{Max: 1, PerMs: 10}
	for _, key := range []string{"held", "free"} {
		if _, err := s.Meter(ctx, "api-w:"+key, rate, t0); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE queue_rates SET log = log WHERE key = 'api-w:held'"); err != nil {
		t.Fatal(err)
	}
	pruneCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Upkeep(pruneCtx, driver.UpkeepRates, 0, t0+1000); err != nil {
		t.Fatalf("UpkeepRates with a window's row held: %v; want the others pruned at once", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	rows, err := d.QueryContext(ctx, "SELECT key FROM queue_rates ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if !slices.Equal(keys, []string{"api-w:held"}) {
		t.Fatalf("windows left after the prune: %v; want the held one alone", keys)
	}
}

// TestPruningNoWindowWritesNothing: with no empty window to forget, the
// prune only reads: it returns at once while another transaction holds
// the database's writes (on SQLite the file's write lock, which a worker
// stopped mid-write would hold; on PostgreSQL a lock of queue_rates that
// a delete waits for).
func TestPruningNoWindowWritesNothing(t *testing.T) {
	t.Parallel()
	for _, url := range []func(testing.TB) string{dbtest.SQLiteURL, dbtest.PostgresURL} {
		d := drivertest.Migrated(t, url(t))
		s := dbdriver.New(d)
		tx, err := d.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		hold := "INSERT INTO queue_rates (key, log, reopen_at, empty_at, rate_max, rate_per) VALUES ('busy', '', 0, 9000000000000, 1, 1)"
		if d.Dialect() == db.Postgres {
			hold = "LOCK TABLE queue_rates IN EXCLUSIVE MODE"
		}
		if _, err := tx.ExecContext(ctx, hold); err != nil {
			t.Fatal(err)
		}
		pruneCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = s.Upkeep(pruneCtx, driver.UpkeepRates, 0, t0)
		cancel()
		tx.Rollback()
		if err != nil {
			t.Fatalf("%s: UpkeepRates with nothing to prune and writes held: %v; want it to return at once, writing nothing", d.Dialect(), err)
		}
	}
}
