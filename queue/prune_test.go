package queue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// failAt makes n failed jobs of queue "default" that fail at the
// fixture's clock, then moves the clock on by step.
func failAt(t *testing.T, f fixture, n int, step time.Duration) []string {
	t.Helper()
	jobs := make([]queue.Job, n)
	for i := range jobs {
		jobs[i] = ExportContacts{CompanyID: "c"}
	}
	ids, err := f.q.DispatchMany(ctx, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		j := f.reserve(t, "default")
		if ok, err := f.store.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "smtp refused the message", At: f.clock.Now().UnixMilli()}); !ok || err != nil {
			t.Fatalf("fail: %v, %v", ok, err)
		}
	}
	f.clock.Advance(step)
	return ids
}

// TestPruneFailedDeletesTheOldInBatches: only the failures older than the
// age go, PruneBatch to a transaction, reported after each; the newer
// ones stay; a stop midway keeps what it has not reached.
func TestPruneFailedDeletesTheOldInBatches(t *testing.T) {
	manyRows(t)
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		failAt(t, f, queue.PruneBatch+500, 10*24*time.Hour) // 10 days ago
		recent := failAt(t, f, 3, time.Hour)                // an hour ago
		stop, cancel := context.WithCancel(ctx)
		n, err := f.q.Inspector().PruneFailed(stop, 7*24*time.Hour, func(int) { cancel() })
		if n != queue.PruneBatch || !errors.Is(err, context.Canceled) {
			t.Fatalf("PruneFailed stopped after a batch = %d, %v", n, err)
		}
		var reported []int
		n, err = f.q.Inspector().PruneFailed(ctx, 7*24*time.Hour, func(d int) { reported = append(reported, d) })
		if n != 500 || err != nil || !slices.Equal(reported, []int{500}) {
			t.Fatalf("PruneFailed of the rest = %d, %v, reported %v", n, err, reported)
		}
		left := f.failed(t)
		if len(left) != 3 || left[0].ID != recent[0] {
			t.Fatalf("%d failed jobs left, want the 3 recent ones", len(left))
		}
		if _, err := f.q.Inspector().PruneFailed(ctx, 0, nil); err == nil || err.Error() != "queue: prune failed jobs: the age is 0s; want more than 0, such as 168h" {
			t.Fatalf("PruneFailed(0): %v", err)
		}
		// The job queue.prune_failed, as a schedule entry dispatches it.
		f.clock.Advance(2 * time.Hour)
		if _, err := f.q.Dispatch(ctx, queue.PruneFailedJob{OlderThanHours: 2}); err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.RunPending(ctx); s.Succeeded != 1 || err != nil {
			t.Fatalf("RunPending of queue.prune_failed = %+v, %v", s, err)
		}
		if left := f.failed(t); len(left) != 0 {
			t.Fatalf("%d failed jobs left after the job pruned those over 2 hours old", len(left))
		}
	})
}

// TestPruneFailedCommand: what queue:prune-failed prints, and refuses.
func TestPruneFailedCommand(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		run := func(args ...string) (string, error) {
			return runApp(t, map[string]any{"database.url": url}, args, db.Module(), queue.Module(), contactsModule)
		}
		if out, err := run("queue:prune-failed"); err != nil || out != "Deleted 0 failed job(s) older than 168h0m0s.\n" {
			t.Fatalf("queue:prune-failed: %q, %v", out, err)
		}
		if _, err := run("queue:prune-failed", "--older-than", "-1h"); err == nil || err.Error() != "queue: prune failed jobs: the age is -1h0m0s; want more than 0, such as 168h" {
			t.Fatalf("queue:prune-failed --older-than -1h: %v", err)
		}
	})
}
