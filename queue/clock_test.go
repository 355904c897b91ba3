package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// systemQueue is a queue on f's store (a second process on f's database,
// or f's own queue for the memory driver) that runs on the system clock,
// but for its wall time, which it reads from wall.
func systemQueue(t *testing.T, f fixture, wall app.Clock, regs ...queue.Registration) *queue.Queue {
	t.Helper()
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: f.driver, PollIntervalMs: 20}, DB: f.db, Clock: app.SystemClock{},
		Logger: slogJSON(f.logs)})
	if err == nil {
		err = q.Handle(regs...)
	}
	if err != nil {
		t.Fatal(err)
	}
	queue.SetSystemWall(q, wall)
	if f.driver == queue.Memory { // one process: share its store
		queue.WrapStore(q, func(driver.Driver) driver.Driver { return f.store })
	}
	return q
}

// attempts records the attempts a handler starts, and holds each until
// the test lets it finish.
type attempts struct {
	mu      sync.Mutex
	seen    []int
	started chan int
	finish  chan struct{}
}

func newAttempts() *attempts {
	return &attempts{started: make(chan int, 10), finish: make(chan struct{})}
}

func (a *attempts) handler() queue.Registration {
	return queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, _ ExportContacts, jc queue.JobContext) error {
		a.mu.Lock()
		a.seen = append(a.seen, jc.Attempt)
		a.mu.Unlock()
		a.started <- jc.Attempt
		<-a.finish
		return nil
	}))
}

// looks counts a worker's looks for stale reservations.
type looks struct {
	driver.Driver
	stale chan struct{}
}

func (l looks) Stale(ctx context.Context, queue string, now int64) (bool, error) {
	select {
	case l.stale <- struct{}{}:
	default:
	}
	return l.Driver.Stale(ctx, queue, now)
}

// TestAClockStepForwardTakesNoRunningJobOver: a worker whose system clock
// jumps a day ahead while it runs a job (an NTP correction, a virtual
// machine resumed after a suspend) does not take its own job over, and
// neither does another server whose clock runs a day ahead: staleness is
// judged on the clock of reservations, which no system clock's step or
// skew moves. On every driver.
func TestAClockStepForwardTakesNoRunningJobOver(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, nil)
			a := newAttempts()
			wall := &offsetClock{}
			q := systemQueue(t, f, wall, a.handler())
			seen := looks{stale: make(chan struct{}, 1)}
			queue.WrapStore(q, func(d driver.Driver) driver.Driver { seen.Driver = d; return seen })
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
				t.Fatal(err)
			}
			done := make(chan queue.WorkStats)
			go func() { stats, _ := q.Work(ctx, queue.WorkOptions{Workers: 2, StopWhenEmpty: true}); done <- stats }()
			<-a.started

			wall.Advance(25 * time.Hour) // past the job's timeout plus 30 s, and past a day
			for range 2 {                // the look under way may have read the clock before the step
				select {
				case <-seen.stale:
				case <-time.After(30 * time.Second): // a bound on the failure only
					t.Fatal("the worker never looked for stale reservations")
				}
			}
			// Another server, its clock a day ahead, searches in full.
			ahead := &offsetClock{offset: 25 * time.Hour}
			if stats, err := systemQueue(t, f, ahead, a.handler()).RunPending(ctx); err != nil || stats.Processed != 0 {
				t.Fatalf("a server whose clock runs ahead ran %+v, %v", stats, err)
			}
			close(a.finish)
			if stats := <-done; counted(stats) != (counts{Processed: 1, Succeeded: 1}) {
				t.Fatalf("the worker ran %+v", stats)
			}
			if a.seen[0] != 1 || len(a.seen) != 1 {
				t.Fatalf("attempts %v; want the first only", a.seen)
			}
		})
	}
}

// TestStaleReservationsAreTakenOverOnTheClockOfReservations: with the
// system clock, a reservation that is stale on the driver's clock of
// reservations is taken over, and one that is fresh there is not,
// whatever the worker's wall clock says.
func TestStaleReservationsAreTakenOverOnTheClockOfReservations(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, nil)
			a := newAttempts()
			close(a.finish)
			q := systemQueue(t, f, &offsetClock{offset: 25 * time.Hour}, a.handler())
			fresh, _ := q.Dispatch(ctx, ExportContacts{CompanyID: "fresh"})
			now := func() int64 { return time.Now().Add(25 * time.Hour).UnixMilli() }
			// Reserved now, on the driver's clock, by a worker still running it.
			if jobs, err := f.store.Reserve(ctx, driver.Reservation{Queue: "default", Now: now(), At: 0, Limit: 1}); err != nil || len(jobs) != 1 || jobs[0].ID != fresh {
				t.Fatalf("reserved %v, %v", jobs, err)
			}
			if stats, err := q.RunPending(ctx); err != nil || stats.Processed != 0 {
				t.Fatalf("a fresh reservation was taken over: %+v, %v", stats, err)
			}
			// Reserved in 1970 by a worker that died.
			old, _ := q.Dispatch(ctx, ExportContacts{CompanyID: "orphan"})
			if jobs, err := f.store.Reserve(ctx, driver.Reservation{Queue: "default", Now: now(), At: 1, Limit: 1}); err != nil || len(jobs) != 1 || jobs[0].ID != old {
				t.Fatalf("reserved %v, %v", jobs, err)
			}
			if stats, err := q.RunPending(ctx); err != nil || counted(stats) != (counts{Processed: 1, Succeeded: 1}) {
				t.Fatalf("the stale reservation: %+v, %v", stats, err)
			}
			if len(a.seen) != 1 || a.seen[0] != 2 {
				t.Fatalf("attempts %v; want the takeover's, 2", a.seen)
			}
		})
	}
}

// TestAClockStepBackDelaysNoNewJob: after the clock moves back (by 30
// seconds, by an hour), a job dispatched since runs at once, though the
// clock never catches up with the times the worker saw before the step:
// with the system clock, and with a clock of the app's own.
func TestAClockStepBackDelaysNoNewJob(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{30 * time.Second, time.Hour} {
		for _, b := range backends {
			for _, system := range []bool{true, false} {
				name := b.name + "/" + step.String() + "/app clock"
				if system {
					name = b.name + "/" + step.String() + "/system clock"
				}
				t.Run(name, func(t *testing.T) {
					ran := make(chan string, 2)
					f := newFixture(t, b.driver, b.url(t), queue.Config{PollIntervalMs: 20}, map[string]queue.Registration{"contacts.export": reporting(ran)})
					q, move := f.q, func(d time.Duration) { f.clock.Advance(d) }
					if system {
						wall := &clock{t: time.Now()}
						q, move = systemQueue(t, f, wall, reporting(ran)), wall.Advance
					}
					workCtx, stop := context.WithCancel(ctx)
					defer stop()
					go q.Work(workCtx, queue.WorkOptions{Workers: 1})
					q.Dispatch(ctx, ExportContacts{CompanyID: "before"})
					if got := <-ran; got != "before" {
						t.Fatalf("ran %q", got)
					}
					move(-step) // and the clock stands still from now on
					q.Dispatch(ctx, ExportContacts{CompanyID: "after"})
					select {
					case got := <-ran:
						if got != "after" {
							t.Fatalf("ran %q", got)
						}
					case <-time.After(20 * time.Second): // a bound on the failure only
						t.Fatalf("a job dispatched after the clock moved back %s did not run", step)
					}
				})
			}
		}
	}
}
