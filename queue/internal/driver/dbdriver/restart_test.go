package dbdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// TestDispatchesTellTheTruthAcrossServerCrashes dispatches from eight
// goroutines, in every way the driver stores jobs (one job, one unique
// job, a COPY of three, three with a unique one, four in the caller's
// unit of work), while the PostgreSQL server crashes and restarts
// (pg_ctl restart -m immediate) three times. Afterwards, every dispatch
// that returned ids stored its jobs, and every one that returned an
// error stored none: no job is stored behind an error (and run), none is
// missing behind an id.
func TestDispatchesTellTheTruthAcrossServerCrashes(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	d := migrated(t, c.URL)
	drv := newPostgres(d)
	ctx := context.Background()
	var again atomic.Int64 // dispatches that lost their answer, outside a unit of work
	storeAgain := drv.again
	drv.again = func(ctx context.Context, jobs []*driver.Job, now int64, first error) ([]string, error) {
		again.Add(1)
		return storeAgain(ctx, jobs, now, first)
	}

	type attempt struct {
		kind      string
		want, got []string
		err       error
	}
	var (
		mu       sync.Mutex
		attempts []attempt
		n        atomic.Int64
	)
	jobs := func(uniques ...bool) []*driver.Job {
		var js []*driver.Job
		for _, u := range uniques {
			i := int(n.Add(1))
			j := marked(i, fmt.Sprint(i))
			if u {
				j.UniqueKey = fmt.Sprintf("x|key:%d", i)
			}
			js = append(js, j)
		}
		return js
	}
	single := func(ctx context.Context, uow *db.UnitOfWork, js []*driver.Job) ([]string, error) {
		id, inserted, err := drv.Insert(ctx, uow, js[0])
		if err == nil && !inserted {
			return nil, fmt.Errorf("%s was not inserted", js[0].ID)
		}
		return []string{id}, err
	}
	many := func(ctx context.Context, uow *db.UnitOfWork, js []*driver.Job) ([]string, error) {
		return drv.InsertMany(ctx, uow, js, 1)
	}
	kinds := []struct {
		name     string
		uniques  []bool
		dispatch func(ctx context.Context, uow *db.UnitOfWork, js []*driver.Job) ([]string, error)
	}{
		{"single", []bool{false}, single},
		{"unique", []bool{true}, single},
		{"bulk", []bool{false, false, false}, many},
		{"many", []bool{true, false, false}, many},
		{"unit of work", []bool{false, true, false, false}, func(ctx context.Context, _ *db.UnitOfWork, js []*driver.Job) ([]string, error) {
			var ids []string
			err := d.Transaction(ctx, func(ctx context.Context) error {
				uow := db.UnitOfWorkFrom(ctx)
				first, err := single(ctx, uow, js[:1])
				if err != nil {
					return err
				}
				second, err := single(ctx, uow, js[1:2])
				if err != nil {
					return err
				}
				rest, err := many(ctx, uow, js[2:])
				ids = slices.Concat(first, second, rest)
				return err
			})
			return ids, err
		}},
	}

	// Each restart comes once every goroutine has stored jobs since the
	// last (so that it learned the outcome of the dispatch the last cut),
	// and 150 dispatches were.
	type success struct {
		g   int
		gen int64
	}
	var gen atomic.Int64
	made := make(chan success, 1000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := kinds[i%len(kinds)]
				js := jobs(k.uniques...)
				a := attempt{kind: k.name}
				for _, j := range js {
					a.want = append(a.want, j.ID)
				}
				began := gen.Load()
				a.got, a.err = k.dispatch(ctx, nil, js)
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
				if a.err != nil {
					// The server is down: no need to spin.
					time.Sleep(5 * time.Millisecond)
					continue
				}
				select {
				case made <- success{g, began}:
				default:
				}
			}
		})
	}
	settle := func() {
		back := map[int]bool{}
		for n := 0; n < 150 || len(back) < 8; {
			if s := <-made; s.gen == gen.Load() {
				back[s.g] = true
				n++
			}
		}
	}
	for range 3 {
		settle()
		c.restart()
		gen.Add(1)
	}
	settle()
	close(stop)
	wg.Wait()

	stored := map[string]bool{}
	for _, id := range column(t, d, "SELECT id::text FROM jobs") {
		stored[id] = true
	}
	var failed, unknown int
	for _, a := range attempts {
		var have []string
		for _, id := range a.want {
			if stored[id] {
				have = append(have, id)
			}
		}
		switch {
		case errors.Is(a.err, db.ErrOutcomeUnknown):
			unknown++
			t.Errorf("%s: outcome unknown: %v", a.kind, a.err)
		case a.err != nil:
			failed++
			if len(have) > 0 {
				t.Errorf("%s: returned %v, yet stored %v", a.kind, a.err, have)
			}
		case !slices.Equal(a.got, a.want) || len(have) != len(a.want):
			t.Errorf("%s: returned %v, stored %v; want %v for both", a.kind, a.got, have, a.want)
		}
	}
	t.Logf("%d dispatches: %d stored, %d failed and stored nothing, %d unknown; %d lost their connection midway outside a unit of work",
		len(attempts), len(attempts)-failed-unknown, failed, unknown, again.Load())
}

// TestACrashAfterALostCommitIsResolved: a unit of work's COMMIT reaches
// the server, which commits and answers; the answer is lost (a proxy
// swallows it) and the server crashes before the driver asks. Asked on
// the restarted server, the unit learns that it committed: Transaction
// returns nil and the job is stored. Had the COMMIT never reached the
// server, the unit learns that it did not.
func TestACrashAfterALostCommitIsResolved(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cut, proxied := newCutter(t, c.URL)
	d := migrated(t, proxied)
	drv := newPostgres(d)
	ctx := context.Background()
	for i, drop := range []bool{false, true} {
		hold := make(chan struct{})
		cut.mu.Lock()
		cut.hold = hold
		cut.mu.Unlock()
		cut.arm(commitRule, drop)
		j := marked(i+1, "crash")
		done := make(chan error)
		go func() {
			done <- d.Transaction(ctx, func(ctx context.Context) error {
				_, _, err := drv.Insert(ctx, db.UnitOfWorkFrom(ctx), j)
				return err
			})
		}()
		<-cut.cuts // the server committed, or never got the COMMIT
		c.restart()
		close(hold) // the driver reads the end of its connection
		err := <-done
		stored := storedOf(t, d, []string{j.ID})
		switch {
		case !drop && (err != nil || len(stored) != 1):
			t.Errorf("committed: Transaction = %v, stored %v; want nil and the job", err, stored)
		case drop && (err == nil || err.Error() != "db: commit: lost the connection (conn closed); the server says the transaction did not commit" || len(stored) != 0):
			t.Errorf("dropped: Transaction = %v, stored %v; want an error saying it did not commit, and nothing", err, stored)
		}
	}
}

// TestAnIDGivenAgainAfterACrashIsNotTakenForOurs: PostgreSQL gives a
// transaction id that never reached the disk again after a crash. A unit
// of work that dispatched a job, lost its server to a crash before its
// COMMIT and finds its id committed by the transaction that took it
// since does not take that commit for its own: its commit fails, saying
// it did not commit, and no job is stored. (The server is set so that
// nothing writes the unit's changes to disk before the crash.)
func TestAnIDGivenAgainAfterACrashIsNotTakenForOurs(t *testing.T) {
	t.Parallel()
	c := newCluster(t, "-c wal_writer_delay=10s", "-c bgwriter_lru_maxpages=0", "-c autovacuum=off")
	d := migrated(t, c.URL)
	drv := newPostgres(d)
	ctx := context.Background()
	j := marked(1, "given again")
	var ours string
	err := d.Transaction(ctx, func(ctx context.Context) error {
		if _, _, err := drv.Insert(ctx, db.UnitOfWorkFrom(ctx), j); err != nil {
			return err
		}
		q, err := d.Querier(ctx)
		if err != nil {
			return err
		}
		if err := q.QueryRowContext(ctx, "SELECT pg_current_xact_id()::text").Scan(&ours); err != nil {
			return err
		}
		c.restart()
		// The first transaction since takes the id again and commits
		// (the pool's first connections are dead: the crash ended them).
		var theirs string
		for range 20 {
			if err = d.DB.DB.QueryRowContext(ctx, "SELECT pg_current_xact_id()::text").Scan(&theirs); err == nil {
				break
			}
		}
		if theirs != ours {
			t.Fatalf("after the crash, the next transaction id is %s (%v), not the lost %s again", theirs, err, ours)
		}
		return nil
	})
	if err == nil || err.Error() != "db: commit: lost the connection (conn closed); the server says the transaction did not commit" {
		t.Errorf("Transaction = %v, want an error saying it did not commit", err)
	}
	var status string
	if err := d.DB.DB.QueryRowContext(ctx, "SELECT pg_xact_status($1::xid8)", ours).Scan(&status); err != nil || status != "committed" {
		t.Errorf("pg_xact_status(%s) = %q, %v; want committed (by the other transaction)", ours, status, err)
	}
	if stored := storedOf(t, d, []string{j.ID}); len(stored) != 0 {
		t.Errorf("stored %v, want nothing", stored)
	}
}
