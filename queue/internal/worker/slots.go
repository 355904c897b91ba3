package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

	// For a cancel: the context of the slot's attempts, made again only
	// after a cancel ended it (one per attempt would cost the memory
	// driver a fifth of its speed), and the job it runs.
	mu          sync.Mutex
	ctx         context.Context
	cancel      context.CancelCauseFunc
	current     *driver.Job // nil while idle
	cancelled   bool        // the current attempt was cancelled
	interrupted bool        // the current attempt was interrupted by the stop
	returned    bool        // the current attempt's handler returned
}

// begin makes job the slot's current attempt and returns its context.
func (s *slot) begin(parent context.Context, job *driver.Job) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		s.ctx, s.cancel = context.WithCancelCause(parent)
	}
	s.current, s.cancelled, s.interrupted, s.returned = job, false, false, false
	return s.ctx
}

// handlerReturned marks the current attempt's handler returned, so that
// a stop no longer interrupts it, and reports whether the stop did
// before: whatever the handler returned then, it was cut off. An
// interruption that comes after the handler returned, its work done,
// does not count.
func (s *slot) handlerReturned() (interrupted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.returned = true
	return s.interrupted
}

// end ends the current attempt.
func (s *slot) end() {
	s.mu.Lock()
	s.current = nil
	s.mu.Unlock()
}

// running returns the job the slot runs, if any and not cancelled.
func (s *slot) running() *driver.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancelled {
		return nil
	}
	return s.current
}

// cancelIf cancels the current attempt, with cause, if it is of the job
// id and, unless attempt is 0, that attempt; it reports whether it did.
func (s *slot) cancelIf(id string, attempt int, cause error) (*driver.Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil || s.cancelled || s.current.ID != id || attempt != 0 && s.current.Attempts != attempt {
		return nil, false
	}
	s.cancelled = true
	s.cancel(cause)
	return s.current, true
}

// slotList is a copy of the worker's slots, for a goroutine other than
// the watchdog, which replaces them.
func (w *worker) slotList() []*slot {
	w.slotsMu.Lock()
	defer w.slotsMu.Unlock()
	return slices.Clone(w.slots)
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
				w.record(job, time.Since(s.start).Milliseconds(), 0,
					&attemptError{msg: fmt.Sprintf("timed out after %s", time.Duration(job.TimeoutMs)*time.Millisecond)})
				w.slotsMu.Lock()
				w.slots[i] = w.startSlot()
				w.slotsMu.Unlock()
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
