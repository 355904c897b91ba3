package dbdriver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// queueSets are the migration sets of the queue's tables.
var queueSets = []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}

// migrated opens the database at url with the queue's tables.
func migrated(t testing.TB, url string) *db.DB {
	t.Helper()
	d := dbtest.Open(t, url)
	if _, err := db.NewMigrator(d, queueSets).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// openDriver opens the driver of a database with the queue's tables:
// "sqlite", a new file, or "postgres", a new schema.
func openDriver(t testing.TB, name string) (driver.Driver, *db.DB) {
	if name == "postgres" {
		d := migrated(t, dbtest.MigratedPostgresURL(t, queueSets...))
		return newPostgres(d), d
	}
	d := migrated(t, dbtest.MigratedSQLiteURL(t, queueSets...))
	return newSQLite(d), d
}

func openSQLite(t *testing.T) (*sqliteDriver, *db.DB) {
	t.Helper()
	d := migrated(t, dbtest.MigratedSQLiteURL(t, queueSets...))
	return newSQLite(d), d
}

func job(n int) *driver.Job {
	return &driver.Job{ID: fmt.Sprintf("01900000-0000-7000-8000-%012d", n), Queue: "default", Name: "x", Payload: []byte(`{}`),
		MaxAttempts: 1, Backoff: backoff.Fixed(0), AvailableAt: 1, CreatedAt: 1}
}

func count(t *testing.T, d *db.DB) int {
	t.Helper()
	var n int
	if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConcurrentInsertsShareCommits: single inserts that wait for a turn
// (on SQLite the write lock) are stored together; each caller returns
// once its own job is committed.
func TestConcurrentInsertsShareCommits(t *testing.T) {
	onBoth(t, func(t *testing.T, name string, drv driver.Driver, d *db.DB) {
		ctx := context.Background()
		const goroutines, each = 8, 100
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					j := job(g*each + i)
					if id, inserted, err := drv.Insert(ctx, nil, j); err != nil || !inserted || id != j.ID {
						t.Errorf("Insert = %s, %v, %v", id, inserted, err)
						return
					}
					// Committed when Insert returns: another connection sees it.
					var seen int
					if err := d.QueryRowContext(ctx, "SELECT count(*) FROM jobs WHERE id = ?", j.ID).Scan(&seen); err != nil || seen != 1 {
						t.Errorf("job %s after Insert returned: %d rows, %v", j.ID, seen, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if n := count(t, d); n != goroutines*each {
			t.Fatalf("%d jobs stored, want %d", n, goroutines*each)
		}
	})
}

// onBoth runs f on a new database of SQLite and of PostgreSQL, in
// parallel.
func onBoth(t *testing.T, f func(t *testing.T, name string, drv driver.Driver, d *db.DB)) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drv, d := openDriver(t, name)
			f(t, name, drv, d)
		})
	}
}

// groupOf is the grouper of a driver's single inserts.
func groupOf(drv driver.Driver) *grouper {
	if p, ok := drv.(*postgresDriver); ok {
		return &p.group
	}
	return &drv.(*sqliteDriver).group
}

// storedJobs reads the jobs stored, each as the last digit of its id
// and its payload, in the order of their ids.
const storedJobs = "SELECT substr(CAST(id AS TEXT), 36) || payload FROM jobs ORDER BY id"

// heldInserts starts an Insert of each of jobs, and returns once every
// one waits for its turn, held until release is called; then the first
// to get a turn stores the others' jobs with its own. done receives each
// job's error, by its index in jobs.
func heldInserts(t *testing.T, drv driver.Driver, jobs []*driver.Job) (release func(), done []chan error) {
	t.Helper()
	ctxs := make([]context.Context, len(jobs))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return heldInsertsIn(t, drv, jobs, ctxs)
}

// heldInsertsIn is heldInserts with the context of each Insert; one that
// ends while its insert waits for its turn withdraws it.
func heldInsertsIn(t *testing.T, drv driver.Driver, jobs []*driver.Job, ctxs []context.Context) (release func(), done []chan error) {
	t.Helper()
	g := groupOf(drv)
	turn, gate := g.turn, make(chan struct{})
	arrived := make(chan struct{}, len(jobs))
	g.turn = func(ctx context.Context, fn func() error) error {
		select {
		case arrived <- struct{}{}: // it waits in g.waiting by now
		default: // one more than jobs: the test's to see
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return turn(ctx, fn)
	}
	done = make([]chan error, len(jobs))
	for i, j := range jobs {
		done[i] = make(chan error, 1)
		go func() {
			_, _, err := drv.Insert(ctxs[i], nil, j)
			done[i] <- err
		}()
	}
	timeout := time.After(time.Minute)
	for range jobs {
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("after a minute, not all of %d inserts wait for a turn", len(jobs))
		}
	}
	return sync.OnceFunc(func() { close(gate) }), done
}

// TestWaitingInsertsShareOneStatement: the single dispatches that wait
// for a turn together are stored together, on PostgreSQL in one
// statement (one transaction: the rows' xmin).
func TestWaitingInsertsShareOneStatement(t *testing.T) {
	onBoth(t, func(t *testing.T, name string, drv driver.Driver, d *db.DB) {
		jobs := []*driver.Job{job(1), job(2), job(3), job(4), job(5)}
		jobs[1].Priority = 5                                                    // a feature: recorded as the group is stored
		jobs[3].RateKey, jobs[3].Rate = "api", driver.Rate{Max: 5, PerMs: 1000} // another
		release, done := heldInserts(t, drv, jobs)
		release()
		for i, c := range done {
			if err := <-c; err != nil {
				t.Errorf("Insert of job %d: %v", i+1, err)
			}
		}
		if n := count(t, d); n != len(jobs) {
			t.Fatalf("%d jobs stored, want %d", n, len(jobs))
		}
		var features int
		if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM queue_features WHERE queue = 'default'").Scan(&features); err != nil || features != 2 {
			t.Fatalf("%d features recorded of the group's queue (%v), want 2: a priority and a rate limit", features, err)
		}
		if name == "postgres" {
			var transactions int
			if err := d.QueryRowContext(context.Background(), "SELECT count(DISTINCT xmin::text) FROM jobs").Scan(&transactions); err != nil || transactions != 1 {
				t.Fatalf("the 5 jobs were stored by %d transactions (%v), want 1", transactions, err)
			}
		}
	})
}

// TestAFairJobIsNotHeldUpByAGroup: on PostgreSQL a job with a fairness
// key, whose place may wait for its key's lock, is stored alone, never
// in a group: it does not wait for the turn the groups wait for.
func TestAFairJobIsNotHeldUpByAGroup(t *testing.T) {
	t.Parallel()
	drv, d := openDriver(t, "postgres")
	release, done := heldInserts(t, drv, []*driver.Job{job(1), job(2)})
	defer release()
	fairJob := job(3)
	fairJob.FairKey = "account:42"
	stored := make(chan error, 1)
	go func() {
		_, _, err := drv.Insert(context.Background(), nil, fairJob)
		stored <- err
	}()
	select {
	case err := <-stored:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("after a minute, the fair job still waits: for the groups' turn")
	}
	var place int64
	if err := d.QueryRowContext(context.Background(), "SELECT fair_seq FROM jobs WHERE id = ?", fairJob.ID).Scan(&place); err != nil || place != 1 {
		t.Fatalf("the fair job's place = %d, %v; want 1, stored while the group waits", place, err)
	}
	release()
	for i, c := range done {
		if err := <-c; err != nil {
			t.Errorf("Insert of job %d: %v", i+1, err)
		}
	}
}

// TestAWaitingInsertGivenUpIsNotStored: on both databases, a dispatch
// whose context ends while it waits for its turn returns the context's
// error, and the group that then gets the turn leaves its job out.
func TestAWaitingInsertGivenUpIsNotStored(t *testing.T) {
	onBoth(t, func(t *testing.T, name string, drv driver.Driver, d *db.DB) {
		given, giveUp := context.WithCancel(context.Background())
		release, done := heldInsertsIn(t, drv, []*driver.Job{job(1), job(2), job(3)},
			[]context.Context{context.Background(), given, context.Background()})
		giveUp()
		if err := <-done[1]; !errors.Is(err, context.Canceled) {
			t.Fatalf("Insert of job 2, its context ended while it waited: %v", err)
		}
		release()
		for _, i := range []int{0, 2} {
			if err := <-done[i]; err != nil {
				t.Fatalf("Insert of job %d: %v", i+1, err)
			}
		}
		if got := fmt.Sprint(column(t, d, storedJobs)); got != "[1{} 3{}]" {
			t.Fatalf("stored %v, want jobs 1 and 3 (2 was given up)", got)
		}
	})
}

// TestABadJobFailsOnlyItsOwnDispatch: a group that the database refuses
// for one job (here an id stored already) is stored again a job at a
// time: that job's dispatch fails, the others' are stored.
func TestABadJobFailsOnlyItsOwnDispatch(t *testing.T) {
	onBoth(t, func(t *testing.T, name string, drv driver.Driver, d *db.DB) {
		if _, _, err := drv.Insert(context.Background(), nil, job(2)); err != nil {
			t.Fatal(err)
		}
		again := job(2)
		again.Payload = []byte(`{"again":true}`)
		release, done := heldInserts(t, drv, []*driver.Job{job(1), again, job(3)})
		release()
		for i, c := range done {
			err := <-c
			if bad := i == 1; bad != (err != nil) {
				t.Errorf("Insert of job %d (bad: %v): %v", i+1, bad, err)
			}
		}
		if got := fmt.Sprint(column(t, d, storedJobs)); got != "[1{} 2{} 3{}]" {
			t.Fatalf("stored %v, want jobs 1 and 3 beside the first job 2", got)
		}
	})
}

// TestAnInsertGivenUpIsNotStored: a dispatch whose context ends while it
// waits for the write lock returns the context's error, and its job is
// not stored later by another's group.
func TestAnInsertGivenUpIsNotStored(t *testing.T) {
	t.Parallel()
	drv, d := openSQLite(t)
	ctx := context.Background()
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- d.Transaction(ctx, func(ctx context.Context) error {
			if _, _, err := drv.Insert(ctx, db.UnitOfWorkFrom(ctx), job(1)); err != nil { // takes the write lock
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := drv.Insert(stopped, nil, job(2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Insert with its context ended while another held the lock: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, _, err := drv.Insert(ctx, nil, job(3)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	rows, err := d.QueryContext(ctx, "SELECT id FROM jobs ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		rows.Scan(&id)
		ids = append(ids, id[len(id)-1:])
	}
	if fmt.Sprint(ids) != "[1 3]" {
		t.Fatalf("stored %v, want jobs 1 and 3 (2 was given up)", ids)
	}
}

// TestAnInsertOnAClosedDatabaseFails: the group's error reaches its
// caller; nothing waits for a write that failed.
func TestAnInsertOnAClosedDatabaseFails(t *testing.T) {
	t.Parallel()
	drv, d := openSQLite(t)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := drv.Insert(context.Background(), nil, job(1)); err == nil {
		t.Fatal("Insert on a closed database succeeded")
	}
}
