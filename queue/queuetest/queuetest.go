// Package queuetest fakes the queue in tests: [Fake] records the jobs an
// app dispatches instead of queueing them, and its assertions check them
// (Laravel's Queue::fake()).
//
//	fake := queuetest.NewFake()
//	a := apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), contacts.Module,
//		fake.Replace())
//	// ... exercise the app ...
//	queuetest.AssertDispatched(t, fake, func(j SyncCalendar) bool { return j.UserID == id })
//
// The rules:
//   - A job given to DispatchIn is recorded when its unit of work commits,
//     and not at all if it rolls back.
//   - Every other dispatch (Dispatch, Later, Push, the Dispatcher) is
//     recorded at once, even inside a unit of work that later rolls back,
//     where the real queue would drop it.
//   - The fake accepts any job type, registered or not, where the real
//     queue fails with queue.ErrUnknownJob, and it never runs anything. A
//     test can therefore pass with a job that production refuses: keep one
//     test that dispatches through the real queue. A payload over
//     queue.MaxPayloadBytes it refuses as the queue does.
package queuetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/recording"
	"go.uber.org/fx"
)

// Dispatch is a recorded job.
type Dispatch struct {
	ID string
	queue.Envelope
}

// Fake records dispatched jobs. It is safe for concurrent use.
type Fake struct {
	q *queue.Queue

	mu       sync.Mutex
	recorded []Dispatch
}

// NewFake returns an empty fake.
func NewFake() *Fake {
	f := &Fake{}
	f.q = queue.NewRecording(recorder{f: f})
	return f
}

type recorder struct {
	recording.Mark
	f *Fake
}

func (r recorder) Record(ctx context.Context, uow *db.UnitOfWork, e queue.Envelope) string {
	id := uuid.Must(uuid.NewV7()).String()
	d := Dispatch{ID: id, Envelope: e}
	if uow != nil {
		uow.AfterCommit(func(context.Context) { r.f.add(d) })
		return id
	}
	r.f.add(d)
	return id
}

func (f *Fake) add(d Dispatch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, d)
}

// Replace puts the fake in place of the app's queue module: its
// *queue.Queue and its queue.Dispatcher, which mail, events and
// notifications dispatch through, both record into the fake.
//
//	apptest.New(t, db.Module(), queue.Module(), contacts.Module, fake.Replace())
func (f *Fake) Replace() fx.Option {
	return fx.Replace(f.q, fx.Annotate(f.q, fx.As(new(queue.Dispatcher))))
}

// Queue returns the fake as a *queue.Queue, for code built without fx
// that takes one. In an app, install the fake with [Fake.Replace]: a
// *queue.Queue replaced alone leaves the module's Dispatcher real.
func (f *Fake) Queue() *queue.Queue { return f.q }

// Dispatcher returns the fake as a queue.Dispatcher, for code built
// without fx (mail.Params.Dispatcher, say) or an app without the queue
// module: apptest.Supply[queue.Dispatcher](fake.Dispatcher()).
func (f *Fake) Dispatcher() queue.Dispatcher { return f.q }

// All returns every recorded job, in the order they were recorded.
func (f *Fake) All() []Dispatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Dispatch(nil), f.recorded...)
}

// Envelopes returns every recorded envelope: type, payload, options,
// delay and unique key.
func (f *Fake) Envelopes() []queue.Envelope {
	var out []queue.Envelope
	for _, d := range f.All() {
		out = append(out, d.Envelope)
	}
	return out
}

// Clear forgets every recorded job.
func (f *Fake) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = nil
}

// Dispatched returns the recorded jobs of type J, decoded.
func Dispatched[J queue.Job](f *Fake) []J {
	var zero J
	var out []J
	for _, d := range f.All() {
		if d.Name != zero.JobName() {
			continue
		}
		var job J
		if err := json.Unmarshal(d.Payload, &job); err != nil {
			continue // another Go type under the same name
		}
		out = append(out, job)
	}
	return out
}

// AssertDispatched fails t unless a job of type J was dispatched for which
// match returns true (nil matches any).
func AssertDispatched[J queue.Job](t testing.TB, f *Fake, match func(J) bool) bool {
	t.Helper()
	for _, job := range Dispatched[J](f) {
		if match == nil || match(job) {
			return true
		}
	}
	var zero J
	what := "no " + zero.JobName() + " job was dispatched"
	if len(Dispatched[J](f)) > 0 {
		what = "no dispatched " + zero.JobName() + " job matched"
	}
	t.Errorf("queuetest: %s; %s", what, f.describe())
	return false
}

// AssertDispatchedTimes fails t unless exactly n jobs of type J were
// dispatched.
func AssertDispatchedTimes[J queue.Job](t testing.TB, f *Fake, n int) bool {
	t.Helper()
	if got := len(Dispatched[J](f)); got != n {
		var zero J
		t.Errorf("queuetest: %s was dispatched %d time(s), want %d; %s", zero.JobName(), got, n, f.describe())
		return false
	}
	return true
}

// AssertNotDispatched fails t if a job of type J was dispatched.
func AssertNotDispatched[J queue.Job](t testing.TB, f *Fake) bool {
	t.Helper()
	if got := len(Dispatched[J](f)); got != 0 {
		var zero J
		t.Errorf("queuetest: %s was dispatched %d time(s), want none; %s", zero.JobName(), got, f.describe())
		return false
	}
	return true
}

// AssertNothingDispatched fails t if any job was dispatched.
func (f *Fake) AssertNothingDispatched(t testing.TB) bool {
	t.Helper()
	if len(f.All()) != 0 {
		t.Errorf("queuetest: want no job dispatched; %s", f.describe())
		return false
	}
	return true
}

// describe lists what was dispatched, one job a line.
func (f *Fake) describe() string {
	all := f.All()
	if len(all) == 0 {
		return "nothing was dispatched"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dispatched %d job(s):", len(all))
	for _, d := range all {
		fmt.Fprintf(&b, "\n\t%s %s", d.Name, d.Payload)
		if d.Options.Queue != "" {
			fmt.Fprintf(&b, " queue=%s", d.Options.Queue)
		}
		if d.Delay > 0 {
			fmt.Fprintf(&b, " delay=%s", d.Delay.Round(time.Millisecond))
		}
		if d.UniqueKey != nil {
			fmt.Fprintf(&b, " unique_key=%q", *d.UniqueKey)
		}
	}
	return b.String()
}

// RunPending runs every job that is available now on the real queue q,
// one at a time, as q.RunPending does (on the named queues instead of
// queue.queues when some are given), and fails t at once unless every
// attempt succeeded (or snoozed: see queue.Snooze), naming each failed
// attempt and its error:
//
//	queuetest: not every job attempt succeeded: Processed 1 job attempt(s): 0 succeeded, 1 released for retry, 0 failed.
//		contacts.export job 0199c1d2-…, attempt 1 of 3, released for a retry: smtp refused the message
//
// The jobs those jobs dispatch (an event's queued listeners, a
// notification's deliveries), and the steps of chains, batches and
// workflows their jobs release, and jobs snoozed for no time, run too
// when they are available now. It
// returns what ran. A test that expects a failure calls q.RunPending and
// reads its [queue.WorkStats] instead.
func RunPending(t testing.TB, q *queue.Queue, queues ...string) queue.WorkStats {
	t.Helper()
	var stats queue.WorkStats
	for { // again while a pass ran something: a flow's next steps are due once its completions are stored
		pass, err := q.Work(t.Context(), queue.WorkOptions{Queues: queues, Workers: 1, StopWhenEmpty: true})
		if err != nil {
			t.Fatalf("queuetest: run the pending jobs: %v", err)
		}
		stats.Processed, stats.Succeeded, stats.Released = stats.Processed+pass.Processed, stats.Succeeded+pass.Succeeded, stats.Released+pass.Released
		stats.Failed, stats.Lost, stats.Errors = stats.Failed+pass.Failed, stats.Lost+pass.Lost, append(stats.Errors, pass.Errors...)
		stats.Snoozed += pass.Snoozed
		if pass.Processed == 0 || pass.Succeeded+pass.Snoozed != pass.Processed {
			break
		}
	}
	if stats.Succeeded+stats.Snoozed != stats.Processed {
		t.Fatalf("queuetest: not every job attempt succeeded: %s", strings.ReplaceAll(stats.String(), "\n", "\n\t"))
	}
	return stats
}
