package dbdriver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

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

// TestConcurrentInsertsShareCommits: on SQLite, single inserts that wait
// for the write lock are stored together; each caller returns once its
// own job is committed.
func TestConcurrentInsertsShareCommits(t *testing.T) {
	t.Parallel()
	drv, d := openSQLite(t)
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
