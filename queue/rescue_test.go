package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// slowLooks makes the prober's look behind the cursors take a second,
// as it can on a loaded machine: the prober then waits twenty times that
// before its next such look.
type slowLooks struct {
	driver.Driver
	looks            atomic.Int64
	looked, searched chan struct{}
	searches         atomic.Int64
}

func (s *slowLooks) Reserve(ctx context.Context, r driver.Reservation) ([]*driver.Job, error) {
	defer func() {
		if s.searches.Add(1) == 1 {
			close(s.searched)
		}
	}()
	return s.Driver.Reserve(ctx, r)
}

func (s *slowLooks) Behind(ctx context.Context, queue string, now, from, placeFrom int64, only *driver.Names) (bool, error) {
	time.Sleep(time.Second)
	defer func() {
		if s.looks.Add(1) == 1 {
			close(s.looked)
		}
	}()
	return s.Driver.Behind(ctx, queue, now, from, placeFrom, only)
}

// TestASlowProberDoesNotHoldUpARescue: the prober spends at most a
// twentieth of the time on its looks behind the cursors, so after a look
// of a second it waits twenty before the next; the look for stale
// reservations does not wait for them. A job whose reservation went stale
// a second after such a look is taken over at the next second, while the
// clock has not reached the next look behind the cursors (on a loaded
// machine under PostgreSQL, the wait had held rescues up for 14.6 s with
// a rescue time of 3 s).
func TestASlowProberDoesNotHoldUpARescue(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 1)
	reg := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(_ context.Context, j ExportContacts, jc queue.JobContext) error {
		ran <- jc.JobID
		return nil
	}))
	eachWith(t, queue.Config{PollIntervalMs: 20}, map[string]queue.Registration{"contacts.export": reg}, func(t *testing.T, f fixture) {
		id, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		// A worker that registered nothing reserves it, and is gone: its
		// reservation is stale once its timeout and the grace have passed.
		jobs, err := f.store.Reserve(ctx, driver.Reservation{Queue: "default", Now: f.clock.Now().UnixMilli(), At: f.clock.Now().UnixMilli(), Limit: 1})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Reserve = %v, %v", jobs, err)
		}
		staleIn := time.Duration(driver.StaleAfter(jobs[0].TimeoutMs)) * time.Millisecond
		f.clock.Advance(staleIn - 2500*time.Millisecond)

		s := &slowLooks{looked: make(chan struct{}), searched: make(chan struct{})}
		queue.WrapStore(f.q, func(d driver.Driver) driver.Driver { s.Driver = d; return s })
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.q.Work(workCtx, queue.WorkOptions{Queues: []string{"default"}, Workers: 1})
		}()
		defer func() { stop(); <-done }()

		<-s.searched                             // the first search, a sweep: the prober's time counts from it
		f.clock.Advance(1100 * time.Millisecond) // the prober looks behind the cursor, for a second
		<-s.looked
		f.clock.Advance(1500 * time.Millisecond) // the reservation is stale now
		select {
		case got := <-ran:
			if got != id {
				t.Fatalf("ran job %s, want %s", got, id)
			}
		case <-time.After(30 * time.Second): // a bound on the failure only
			t.Fatal("the stale job was not taken over: the look for stale reservations waited for the prober's share of the time")
		}
	})
}
