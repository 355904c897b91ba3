package schedule_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/schedule"
)

// TestScheduleWorkThroughATransactionPooler: schedule:work through a
// pooler in transaction mode (database.pooler "transaction") dispatches
// an entry's ticks: its lock of a tick and its record are its
// transaction's.
func TestScheduleWorkThroughATransactionPooler(t *testing.T) {
	t.Parallel()
	url := dbtest.PooledPostgresURL(t)
	a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url, "database.pooler": "transaction",
		"database.listen_url": dbtest.ListenURL(url)}}),
		db.Module(), queue.Module(), schedule.Module(), handlers, schedule.Every("reports.often", time.Second, Report{}))
	a.Stdout, a.Stderr = io.Discard, io.Discard
	if err := a.Run(context.Background(), []string{"migrate"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, []string{"schedule:work"}) }()
	d := dbtest.Open(t, url)
	deadline := time.Now().Add(30 * time.Second) // a bound on the failure only
	for {
		var n int
		if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM jobs WHERE name = 'reports.nightly'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks dispatched through the pooler in 30 s; want 2", n)
		}
		select {
		case err := <-done:
			t.Fatalf("schedule:work ended: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
