package queue_test

import (
	"context"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// offsetClock is the real time plus an offset the test moves.
type offsetClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// named returns the PostgreSQL URL of a test's schema with an
// application_name of its own, which every connection opened from it
// shows in pg_stat_activity: a test kills its own connections, not those
// of tests running beside it on the same server.
func named(t *testing.T, schemaURL string) (target, name string) {
	t.Helper()
	u, err := url.Parse(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	v := u.Query()
	name = "navree_" + v.Get("search_path")
	v.Set("application_name", name)
	u.RawQuery = v.Encode()
	return u.String(), name
}

// TestPostgresConnectionsKilled terminates every connection of a worker
// and a dispatcher, again and again, while they run. A dispatch that fails
// says so to its caller; every job whose dispatch succeeded runs; the
// worker logs the errors and goes on.
func TestPostgresConnectionsKilled(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	target, name := named(t, base)
	migrate(t, target)

	var mu sync.Mutex
	ran := map[string]bool{}
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
		mu.Lock()
		defer mu.Unlock()
		ran[jc.JobID] = true
		return nil
	}))
	c := &offsetClock{}
	f := newFixture(t, queue.Database, target, queue.Config{PollIntervalMs: 20}, map[string]queue.Registration{"contacts.export": handler})
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Database, PollIntervalMs: 20}, DB: f.db, Clock: c,
		Logger: slogJSON(f.logs)})
	if err == nil {
		err = q.Handle(handler)
	}
	if err != nil {
		t.Fatal(err)
	}
	admin := dbtest.Open(t, base)

	workCtx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { _, err := q.Work(workCtx, queue.WorkOptions{Workers: 4}); worked <- err }()

	var dispatched []string
	failures := 0
	killed := 0
	for i := range 600 {
		if i%100 == 50 { // six times, mid-stream
			var n int
			if err := admin.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?", name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			killed += n
		}
		id, err := q.Dispatch(ctx, ExportContacts{CompanyID: "c"})
		if err != nil {
			failures++
			if id != "" || !strings.Contains(err.Error(), "queue: dispatch contacts.export") {
				t.Fatalf("a failed dispatch returned %q, %v", id, err)
			}
			continue
		}
		dispatched = append(dispatched, id)
	}
	// Reservations whose completion was cut off are taken over once stale.
	c.Advance(2 * time.Minute)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		missing := 0
		for _, id := range dispatched {
			if !ran[id] {
				missing++
			}
		}
		mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d dispatched jobs never ran", missing, len(dispatched))
		}
		time.Sleep(20 * time.Millisecond) // waiting on the worker in another goroutine
	}
	stop()
	if err := <-worked; err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no connection was killed")
	}
	t.Logf("%d connections killed, %d dispatches failed with an error, %d jobs dispatched and all run", killed, failures, len(dispatched))
}

// TestSQLiteFourProcessesDispatchAndWork: four processes dispatch 300 jobs
// each, one transaction at a time, while they work; no "database is
// locked" reaches a caller or fails a job.
func TestSQLiteFourProcessesDispatchAndWork(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	dbURL := dbtest.SQLiteURL(t)
	migrate(t, dbURL)
	d := dbtest.Open(t, dbURL)
	if _, err := d.ExecContext(ctx, "CREATE TABLE runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		cmd, _, stdout, stderr := worker(t, dbURL, "test:dispatch-and-work", "--jobs", "300")
		wg.Go(func() {
			io.ReadAll(stdout)
			if err := cmd.Wait(); err != nil {
				t.Errorf("a process failed: %v\n%s", err, stderr)
			}
			if strings.Contains(stderr.String(), "locked") || strings.Contains(stderr.String(), "level=ERROR") {
				t.Errorf("a process logged:\n%s", stderr)
			}
		})
	}
	wg.Wait()
	var runs, distinct, failed, left int
	d.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT job_id) FROM runs").Scan(&runs, &distinct)
	d.QueryRowContext(ctx, "SELECT count(*) FROM failed_jobs").Scan(&failed)
	d.QueryRowContext(ctx, "SELECT count(*) FROM jobs").Scan(&left)
	if runs != 1200 || distinct != 1200 || failed != 0 || left != 0 {
		t.Fatalf("%d runs of %d jobs, %d failed, %d left; want 1200 jobs run once each", runs, distinct, failed, left)
	}
}
