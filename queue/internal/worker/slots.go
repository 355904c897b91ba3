package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// abandonAfter is how long a handler has to return once its timeout has
// passed before the worker gives up on it.
const abandonAfter = time.Second

// slot is one handler goroutine of a worker. attempt holds the number of
// the attempt it runs, 0 while idle; whichever of the slot and the
// watchdog swaps that number for 0 first records the attempt's outcome.
type slot struct {
	attempt   atomic.Uint64
	abandonAt atomic.Int64 // Unix nanoseconds after which the watchdog gives the attempt up; 0 never
	job       *driver.Job  // set before attempt, read by the watchdog once it won the swap
	start     time.Time
	running   atomic.Pointer[running] // the attempt running, for a cancel; nil while idle
}

// running is an attempt a slot runs: its job, and what cancels its
// context.
type running struct {
	job       *driver.Job
	cancel    context.CancelCauseFunc
	cancelled atomic.Bool // asked to stop by a cancel request
}

// startSlot starts a handler goroutine: it runs the jobs the fetcher
// hands out until the worker stops, or until the watchdog abandons it.
func (w *worker) startSlot() *slot {
	s := &slot{}
	w.handlers.Add(1)
	go func() {
		for job := range w.jobs {
			if w.takeCtx.Err() != nil { // stopped before it started: not taken
				w.unreserve(job)
			} else if !w.run(s, job) {
				return // abandoned: the watchdog has put another slot in its place
			}
			w.free <- struct{}{}
		}
		w.handlers.Done()
	}()
	return s
}

// watch gives up, every 100 ms, the attempts still running a second after
// their timeout: their handlers ignore their context. It records each as
// timed out and starts a slot in place of its own, which goes on running
// the handler in the background until it returns (Go cannot stop it).
func (w *worker) watch() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var cancels cancelChecks
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			w.checkCancels(&cancels)
			now := time.Now().UnixNano()
			for i, s := range w.slots {
				n := s.attempt.Load()
				if at := s.abandonAt.Load(); n == 0 || at == 0 || now < at || !s.attempt.CompareAndSwap(n, 0) {
					continue
				}
				job := s.job
				w.log.Error("job handler still running after its timeout; abandoned", "name", job.Name, "job_id", job.ID)
				w.record(job, time.Since(s.start).Milliseconds(),
					&attemptError{msg: fmt.Sprintf("timed out after %s", time.Duration(job.TimeoutMs)*time.Millisecond)})
				w.slots[i] = w.startSlot()
				w.handlers.Done() // the abandoned slot's
				w.free <- struct{}{}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
