package queue_test

import (
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// TestTwoWorkerProcessesThroughATransactionPooler: the app through a
// pooler in transaction mode (in CI PgBouncer with a pool of 5 server
// connections, fewer than the two workers' pools of 10 together), with
// database.pooler "transaction" and database.listen_url the server:
// migrate; two worker processes of 8 handlers each run 2,000 jobs, each
// once, none failing; queue:status reads the queues, and the other
// queue:* commands run.
func TestTwoWorkerProcessesThroughATransactionPooler(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	url := dbtest.PooledPostgresURL(t)
	listen := dbtest.ListenURL(url)
	overrides := map[string]any{"database.url": url, "database.pooler": "transaction", "database.listen_url": listen}
	if out, err := runApp(t, overrides, []string{"migrate"}, db.Module(), queue.Module()); err != nil {
		t.Fatalf("migrate through the pooler: %v\n%s", err, out)
	}
	const jobs = 2000
	d, _ := recordJobs(t, url, jobs)
	env := []string{"APP_DATABASE__POOLER=transaction", "APP_DATABASE__LISTEN_URL=" + listen}
	var wg sync.WaitGroup
	for range 2 {
		cmd, _, stdout, stderr := workerIn(t, url, env, "queue:work", "--workers", "8", "--stop-when-empty")
		wg.Go(func() {
			out, _ := io.ReadAll(stdout)
			if err := cmd.Wait(); err != nil {
				t.Errorf("a worker exited with %v\n%s", err, stderr)
			}
			if strings.Contains(stderr.String(), "level=ERROR") || strings.Contains(stderr.String(), "level=WARN") ||
				!strings.Contains(string(out), " 0 released for retry, 0 failed.") {
				t.Errorf("a worker printed %s\n%s", out, stderr)
			}
		})
	}
	wg.Wait()
	var runs, distinct, pending int
	d.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT job_id) FROM runs").Scan(&runs, &distinct)
	d.QueryRowContext(ctx, "SELECT count(*) FROM jobs").Scan(&pending)
	if runs != jobs || distinct != jobs || pending != 0 {
		t.Fatalf("%d runs of %d distinct jobs, %d left; want each of %d jobs run once", runs, distinct, pending, jobs)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd, _, stdout, stderr := workerIn(t, url, env, args...)
		out, _ := io.ReadAll(stdout)
		if err := cmd.Wait(); err != nil || strings.Contains(stderr.String(), "SQLSTATE") {
			t.Fatalf("%s through the pooler: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
		}
		return string(out)
	}
	if out := run("queue:status"); out != "No jobs: every queue is empty.\n" {
		t.Fatalf("queue:status printed %q", out)
	}
	// The other commands, each once: none fails through the pooler.
	for _, args := range [][]string{{"queue:pause", "default"}, {"queue:resume", "default"}, {"queue:dispatch", "test.record", "{}"},
		{"queue:failed"}, {"queue:workers"}, {"queue:batches"}, {"queue:restart"}, {"queue:flush", "default"}, {"queue:prune-failed"}} {
		run(args...)
	}
}

// TestAWorkerSaysHowItHearsOfDispatchesBehindAPooler: behind a
// transaction-mode pooler, a worker without database.listen_url logs
// once at INFO that it polls; one whose listen URL reaches the pooler
// itself (where LISTEN hears nothing) logs a WARN naming the settings to
// change once its own notification has not come back. Each still runs a
// job another process dispatches, by its poll.
func TestAWorkerSaysHowItHearsOfDispatchesBehindAPooler(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	url := dbtest.PooledPostgresURL(t)
	if out, err := runApp(t, map[string]any{"database.url": url, "database.pooler": "transaction"}, []string{"migrate"}, db.Module(), queue.Module()); err != nil {
		t.Fatalf("migrate through the pooler: %v\n%s", err, out)
	}
	d, q := recordJobs(t, url, 0)
	for _, tt := range []struct {
		listen, want string
	}{
		{"", `level=INFO msg="workers poll for the dispatches of other processes every queue.poll_interval_ms: database.pooler is transaction and database.listen_url is empty"`},
		{url, `level=WARN msg="listen for dispatches: no notification reached LISTEN within 5s of listening, not even the worker's own: ` +
			`if database.url (or database.listen_url) is a pooler in transaction mode, set database.pooler = \"transaction\" and database.listen_url ` +
			`to a URL of the server itself; meanwhile workers poll every queue.poll_interval_ms"`},
	} {
		env := []string{"APP_DATABASE__POOLER=transaction", "APP_DATABASE__LISTEN_URL=" + tt.listen}
		cmd, _, _, stderr := workerIn(t, url, env, "queue:work")
		select {
		case <-stderr.when(tt.want):
		case <-time.After(60 * time.Second): // a bound on the failure only
			t.Fatalf("listen URL %q: the worker did not log %s\n%s", tt.listen, tt.want, stderr)
		}
		id, err := q.Dispatch(ctx, Record{})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)                // a bound on the failure only
		for ran := 0; ran == 0; time.Sleep(20 * time.Millisecond) { // the worker polls every 20 ms here
			if err := d.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE job_id = ?", id).Scan(&ran); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("listen URL %q: the worker did not run the job dispatched\n%s", tt.listen, stderr)
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if n := strings.Count(stderr.String(), tt.want); n != 1 {
			t.Errorf("logged %d times; want once:\n%s", n, stderr)
		}
	}
}
