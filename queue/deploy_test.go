package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// blocking is a handler of ExportContacts whose attempts of the company
// "block" tell started their JobContext and wait for their context to
// end (or, with ignore, for release), telling causes why, and return
// ctx.Err() (nil with nilOnDone, as many handlers do); the others succeed
// at once.
type blocking struct {
	started   chan queue.JobContext
	causes    chan error
	release   chan struct{}
	ignore    bool
	nilOnDone bool
}

func newBlocking(ignore bool) *blocking {
	return &blocking{started: make(chan queue.JobContext, 10), causes: make(chan error, 10), release: make(chan struct{}), ignore: ignore}
}

func (b *blocking) registration() map[string]queue.Registration {
	return map[string]queue.Registration{"contacts.export": queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](
		func(ctx context.Context, e ExportContacts, jc queue.JobContext) error {
			if e.CompanyID != "block" {
				return nil
			}
			b.started <- jc
			if b.ignore {
				<-b.release
				b.causes <- context.Cause(ctx)
				return nil
			}
			select {
			case <-ctx.Done():
				b.causes <- context.Cause(ctx)
				if b.nilOnDone {
					return nil
				}
				return ctx.Err()
			case <-b.release:
				return nil
			}
		}))}
}

// TestTheStopDeadlineInterruptsTheRunningJobs: once the worker is told
// to stop, a running job has until StopTimeout; then its context ends
// with the cause ErrInterrupted, and the job goes back to wait with its
// attempt not spent (the next run is attempt 1 again), no error kept,
// whatever its handler returns: ctx.Err(), or nil (a handler that
// returns when its context ends, <-ctx.Done(); return nil, did not
// finish its work).
func TestTheStopDeadlineInterruptsTheRunningJobs(t *testing.T) {
	t.Parallel()
	for _, nilOnDone := range []bool{false, true} {
		t.Run(map[bool]string{false: "returns ctx.Err()", true: "returns nil"}[nilOnDone], func(t *testing.T) {
			t.Parallel()
			stopDeadlineInterrupts(t, nilOnDone)
		})
	}
}

func stopDeadlineInterrupts(t *testing.T, nilOnDone bool) {
	b := newBlocking(false)
	b.nilOnDone = nilOnDone
	eachWith(t, queue.Config{Workers: 2}, b.registration(), func(t *testing.T, f fixture) {
		id, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "block"})
		if err != nil {
			t.Fatal(err)
		}
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan error)
		var stats queue.WorkStats
		go func() {
			var err error
			stats, err = f.q.Work(workCtx, queue.WorkOptions{StopTimeout: 30 * time.Millisecond})
			done <- err
		}()
		if jc := <-b.started; jc.JobID != id || jc.Attempt != 1 {
			t.Fatalf("started %+v", jc)
		}
		stop()
		if cause := <-b.causes; cause != queue.ErrInterrupted {
			t.Fatalf("the handler's context ended with the cause %v, want ErrInterrupted", cause)
		}
		if err := <-done; err != nil || stats.Interrupted != 1 || stats.Processed != 1 || stats.Failed+stats.Released+stats.Lost != 0 {
			t.Fatalf("Work = %+v, %v; want one attempt interrupted", stats, err)
		}
		if got := stats.String(); got != "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 interrupted by the stop (back on their queues)." {
			t.Errorf("the summary reads %q", got)
		}
		j, err := f.q.Inspector().Job(ctx, id)
		if err != nil || j.State != queue.StateWaiting || j.Attempts != 0 || len(j.Failures) != 0 || j.LastError != "" {
			t.Fatalf("after the interruption the job is %+v (%v); want it waiting, no attempt spent, no error", j, err)
		}
		logs := f.logs.String()
		if !strings.Contains(logs, `"msg":"interrupting a running job: the worker is stopping"`) || !strings.Contains(logs, `"outcome":"interrupted"`) {
			t.Errorf("the interruption is not logged:\n%s", logs)
		}
		release := b.release
		go func() { <-b.started; close(release) }()
		s, err := f.q.RunPending(ctx)
		if err != nil || s.Succeeded != 1 {
			t.Fatalf("RunPending after the interruption = %+v, %v", s, err)
		}
		b.release = make(chan struct{})
	})
}

// TestAnInterruptedAttemptIsKeptInTheJobsHistory: an attempt
// interrupted by the stop is kept among the job's attempts, with when it
// ended, how long it ran and its worker; the job is due again from then,
// so the wait of the attempt that runs it again (the same attempt
// number) counts from the interruption, not over the interrupted run.
// queue:job prints both attempts.
func TestAnInterruptedAttemptIsKeptInTheJobsHistory(t *testing.T) {
	t.Parallel()
	b := newBlocking(false)
	eachWith(t, queue.Config{KeepSucceeded: time.Hour}, b.registration(), func(t *testing.T, f fixture) {
		id, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "block"})
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Second) // it waits 2 s
		now := make(chan struct{})
		done := make(chan queue.WorkStats)
		go func() { s, _ := f.q.Work(ctx, queue.WorkOptions{StopNow: now}); done <- s }()
		<-b.started
		f.clock.Advance(10 * time.Second) // it runs 10 s, on the queue's clock
		close(now)
		if s := <-done; s.Interrupted != 1 {
			t.Fatalf("Work = %+v; want one attempt interrupted", s)
		}
		j, err := f.q.Inspector().Job(ctx, id)
		if err != nil || j.State != queue.StateWaiting || j.Attempts != 0 || len(j.Failures) != 0 || j.LastError != "" || len(j.Interruptions) != 1 ||
			j.Interruptions[0].Attempt != 1 || !j.Interruptions[0].At.Equal(t0.Add(12*time.Second)) || j.Interruptions[0].Worker == "" ||
			!j.AvailableAt.Equal(t0.Add(12*time.Second)) {
			t.Fatalf("after the interruption the job is %+v (%v); want it waiting from the interruption, one interrupted attempt kept, no failure", j, err)
		}
		interruptedBy := j.Interruptions[0].Worker
		f.clock.Advance(3 * time.Second) // it waits 3 s more
		release := b.release
		go func() { <-b.started; close(release) }()
		if s, err := f.q.RunPending(ctx); err != nil || s.Succeeded != 1 {
			t.Fatalf("RunPending after the interruption = %+v, %v", s, err)
		}
		b.release = make(chan struct{})
		j, err = f.q.Inspector().Job(ctx, id)
		if err != nil || j.State != queue.StateSucceeded || j.Attempts != 1 || j.Wait != 3*time.Second || len(j.Interruptions) != 1 {
			t.Fatalf("the job that succeeded: %+v (%v); want attempt 1, having waited 3 s since the interruption", j, err)
		}
		steps := j.Timeline()
		if len(steps) != 2 || steps[0].Outcome != queue.OutcomeInterrupted || steps[0].Attempt != 1 || steps[1].Outcome != queue.OutcomeSucceeded || steps[1].Attempt != 1 {
			t.Fatalf("the timeline: %+v", steps)
		}
		j.RunTime, j.Interruptions[0].RunTime = 120*time.Millisecond, 10*time.Second // the machine's, made fixed
		var out strings.Builder
		if err := queue.PrintJob(&out, j, false); err != nil {
			t.Fatal(err)
		}
		got := strings.NewReplacer(id, "ID", j.Worker, "WORKER2", interruptedBy, "WORKER1").Replace(out.String())
		want := "Job ID: contacts.export on default, succeeded\n" +
			"  Dispatched  2026-10-26 08:14:02.000 UTC\n" +
			"  Finished    2026-10-26 08:14:17.000 UTC, after waiting 3s and running 120ms\n" +
			"  Attempts    1 of 3\n" +
			"  Worker      WORKER2\n" +
			"  Payload     40 bytes\n" +
			"Attempts:\n" +
			"  1  interrupted: its worker stopped; the attempt not spent  2026-10-26 08:14:14.000 UTC  ran 10s    worker WORKER1\n" +
			"  1  succeeded                                               2026-10-26 08:14:17.000 UTC  ran 120ms  worker WORKER2\n"
		if got != want {
			t.Errorf("queue:job printed:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestAJobThatFinishesBeforeTheDeadlineIsNotInterrupted: a stop with a
// deadline lets a job that ends in time succeed; Work returns as soon as
// it has, not at the deadline.
func TestAJobThatFinishesBeforeTheDeadlineIsNotInterrupted(t *testing.T) {
	t.Parallel()
	b := newBlocking(false)
	eachWith(t, queue.Config{StopTimeout: time.Hour}, b.registration(), func(t *testing.T, f fixture) {
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "block"})
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan queue.WorkStats)
		go func() { s, _ := f.q.Work(workCtx, queue.WorkOptions{}); done <- s }()
		<-b.started
		stop()
		close(b.release)
		if s := <-done; s.Succeeded != 1 || s.Interrupted != 0 {
			t.Fatalf("Work = %+v; want the job succeeded", s)
		}
		if n := f.pending(t, "default"); n != 0 {
			t.Fatalf("%d jobs pending", n)
		}
		b.release = make(chan struct{})
	})
}

// TestStopNowInterruptsAtOnce: StopNow interrupts the running jobs even
// with no deadline, and stops the worker taking jobs.
func TestStopNowInterruptsAtOnce(t *testing.T) {
	t.Parallel()
	b := newBlocking(false)
	eachWith(t, queue.Config{}, b.registration(), func(t *testing.T, f fixture) {
		id, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "block"})
		now := make(chan struct{})
		done := make(chan queue.WorkStats)
		go func() { s, _ := f.q.Work(ctx, queue.WorkOptions{StopNow: now}); done <- s }()
		<-b.started
		close(now)
		if cause := <-b.causes; cause != queue.ErrInterrupted {
			t.Fatalf("the cause is %v", cause)
		}
		if s := <-done; s.Interrupted != 1 {
			t.Fatalf("Work = %+v", s)
		}
		if j, err := f.q.Inspector().Job(ctx, id); err != nil || j.State != queue.StateWaiting || j.Attempts != 0 {
			t.Fatalf("the job is %+v (%v)", j, err)
		}
	})
}

// TestAHandlerThatIgnoresTheStopIsLeftBehind: a handler that does not
// return a second after its interruption is given up: Work returns, the
// job stays reserved without an outcome (the handler's late return
// records none), and the worker stays registered, so that the job is
// taken over once its heartbeat is queue.rescue_after old, not before:
// it is not lost, and not run twice at once.
func TestAHandlerThatIgnoresTheStopIsLeftBehind(t *testing.T) {
	t.Parallel()
	b := newBlocking(true)
	eachWith(t, queue.Config{StopTimeout: time.Millisecond}, b.registration(), func(t *testing.T, f fixture) {
		id, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "block"})
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan queue.WorkStats)
		go func() { s, _ := f.q.Work(workCtx, queue.WorkOptions{}); done <- s }()
		<-b.started
		stop()
		s := <-done
		if s.Abandoned != 1 || s.Interrupted != 0 || s.Processed != 1 {
			t.Fatalf("Work = %+v; want one attempt left running", s)
		}
		if got := s.String(); got != "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 left running at the stop (taken over after queue.rescue_after)." {
			t.Errorf("the summary reads %q", got)
		}
		if !strings.Contains(f.logs.String(), `"msg":"job handler still running a second after it was interrupted; the worker stops without it, and the job is taken over once this worker's heartbeat is queue.rescue_after old"`) {
			t.Errorf("the abandon is not logged:\n%s", f.logs)
		}
		workers, err := f.q.Inspector().Workers(ctx)
		if err != nil || len(workers) != 1 || workers[0].Gone {
			t.Fatalf("workers %+v (%v); want the stopped one still registered, alive until its rescue time", workers, err)
		}
		close(b.release)
		if cause := <-b.causes; cause != queue.ErrInterrupted {
			t.Fatalf("the cause is %v", cause)
		}
		if j, err := f.q.Inspector().Job(ctx, id); err != nil || j.State != queue.StateRunning || j.Attempts != 1 {
			t.Fatalf("after the late return the job is %+v (%v); want it still reserved by attempt 1", j, err)
		}
		if s, err := f.q.RunPending(ctx); err != nil || s.Processed != 0 {
			t.Fatalf("RunPending before the rescue time = %+v, %v; want nothing taken", s, err)
		}
		f.clock.Advance(16 * time.Second)
		b.ignore, b.release = false, make(chan struct{})
		release := b.release
		go func() { <-b.started; close(release) }()
		if s, err := f.q.RunPending(ctx); err != nil || s.Succeeded != 1 {
			t.Fatalf("RunPending after the rescue time = %+v, %v; want the job taken over and run", s, err)
		}
		b.ignore, b.release = true, make(chan struct{})
	})
}

// TestARestartStopsTheWorkersRegisteredBeforeIt: Restart asks the
// running worker, which lets its running job end, takes no new job, and
// returns ErrRestart; a worker started after the request keeps working
// and runs the job dispatched since. Restart with no worker asks none.
func TestARestartStopsTheWorkersRegisteredBeforeIt(t *testing.T) {
	t.Parallel()
	b := newBlocking(false)
	eachWith(t, queue.Config{}, b.registration(), func(t *testing.T, f fixture) {
		queue.SetHeartbeatEvery(f.q, 5*time.Millisecond)
		if asked, err := f.q.Inspector().Restart(ctx); len(asked) != 0 || err != nil {
			t.Fatalf("Restart with no worker asked %+v (%v)", asked, err)
		}
		first, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "block"})
		oldDone := make(chan error)
		var oldStats queue.WorkStats
		go func() {
			var err error
			oldStats, err = f.q.Work(ctx, queue.WorkOptions{Workers: 2})
			oldDone <- err
		}()
		<-b.started
		asked, err := f.q.Inspector().Restart(ctx)
		if err != nil || len(asked) != 1 || asked[0].Kind != queue.KindWorker || asked[0].RestartAt.IsZero() {
			t.Fatalf("Restart asked %+v (%v); want the running worker", asked, err)
		}
		seen := f.logs.when(`"msg":"restart requested (queue:restart): stopping once the running jobs end"`)
		<-seen
		newCtx, stopNew := context.WithCancel(ctx)
		defer stopNew()
		ran := make(chan struct{})
		var once sync.Once
		newDone := make(chan error)
		go func() {
			s, err := f.q.Work(newCtx, queue.WorkOptions{Progress: func(s queue.WorkStats) {
				if s.Succeeded > 0 {
					once.Do(func() { close(ran) })
				}
			}})
			if s.Succeeded != 1 {
				err = errors.Join(err, errors.New("the new worker did not run the second job"))
			}
			newDone <- err
		}()
		second, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "after"})
		<-ran // by the new worker: the old one takes no new job
		close(b.release)
		if err := <-oldDone; !errors.Is(err, queue.ErrRestart) || oldStats.Succeeded != 1 || oldStats.Processed != 1 {
			t.Fatalf("the old worker returned %+v, %v; want its running job done, no other, and ErrRestart", oldStats, err)
		}
		stopNew()
		if err := <-newDone; err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{first, second} {
			if _, err := f.q.Inspector().Job(ctx, id); !errors.Is(err, queue.ErrNoJob) {
				t.Errorf("job %s: %v; want it done", id, err)
			}
		}
		b.release = make(chan struct{})
	})
}

// TestARestartAsksAGoneWorkerToo: a worker whose heartbeat stopped (a
// paused process) is asked too, and shown gone: it restarts if it comes
// back rather than run the old build on.
func TestARestartAsksAGoneWorkerToo(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		w := driver.Worker{ID: "0193f2b0-0000-7000-8000-000000000301", Kind: driver.KindWorker, Host: "app-2", PID: 7, Version: "old",
			StartedAt: f.clock.Now().UnixMilli(), RescueMs: 15_000}
		if _, err := f.store.Heartbeat(ctx, w, f.clock.Now().UnixMilli(), nil); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(20 * time.Second)
		asked, err := f.q.Inspector().Restart(ctx)
		if err != nil || len(asked) != 1 || asked[0].ID != w.ID || !asked[0].Gone || asked[0].RestartAt != f.clock.Now().UTC() {
			t.Fatalf("Restart asked %+v (%v); want the gone worker, shown gone", asked, err)
		}
		if b, err := f.store.Heartbeat(ctx, w, f.clock.Now().UnixMilli(), nil); err != nil || !b.Restart {
			t.Fatalf("the gone worker's next beat = %+v, %v; want it told to restart", b, err)
		}
	})
}
