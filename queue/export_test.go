package queue

import (
	"context"
	"io"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue/internal/driver"
)

// StoreOf exposes a queue's driver to the tests, which reserve and fail
// jobs through it until the worker runs them.
func StoreOf(q *Queue) driver.Driver { return q.store }

// OnListen has f called each time a worker of q starts listening for
// dispatches of other processes.
func OnListen(q *Queue, f func()) { q.onListen = f }

// WrapStore puts wrap's driver between q and its store, for tests that
// watch what a worker asks of it.
func WrapStore(q *Queue, wrap func(driver.Driver) driver.Driver) { q.store = wrap(q.store) }

// SetSystemWall makes q, which runs on the system clock, read the wall
// time from wall instead: a test steps or skews the system clock of one
// queue and keeps everything else as it is with the system clock.
func SetSystemWall(q *Queue, wall app.Clock) {
	if !q.system {
		panic("SetSystemWall: the queue does not run on the system clock")
	}
	q.clock = wall
}

// The batch sizes, for the tests of package queue_test.
const (
	PruneBatch = pruneBatch
	RetryBatch = retryBatch
)

// SetHeartbeatEvery has q's workers beat their hearts every d.
func SetHeartbeatEvery(q *Queue, d time.Duration) { q.heartbeatEvery = d }

// PrintJob is what queue:job prints of j.
func PrintJob(w io.Writer, j JobDetail, payload bool) error { return printJob(w, j, payload) }

// PrintStatus is what queue:status prints of stats.
func PrintStatus(w io.Writer, stats []Stats, all, asJSON bool) error {
	return printStatus(w, stats, all, asJSON)
}

// JobByPrefix is how queue:job finds the job of its argument, an id or
// the start of one.
func JobByPrefix(i *Inspector, ctx context.Context, id string) (JobDetail, error) {
	return i.jobByPrefix(ctx, id)
}
