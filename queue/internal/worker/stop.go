package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// ErrInterrupted is the cause of the context of an attempt still running
// at its worker's stop deadline (Options.StopTimeout, or StopNow): a
// handler that heeds it returns, and its job goes back to wait without
// spending the attempt, for another worker to run again from the start.
var ErrInterrupted = errors.New("the worker is stopping: the job is interrupted and goes back to its queue, its attempt not spent")

// ErrRestart is the cause of a worker's stop when a restart was
// requested of it (queue:restart), and Run's error after it: the worker
// took no more jobs, let its running ones end, and stopped.
var ErrRestart = errors.New("queue: restart requested (queue:restart): the worker let its running jobs end and stopped; start it again to run the new build")

// finish waits for the running attempts to end, and returns how many it
// gave up on. Once the worker is told to stop (stopped ends: ctx, a
// restart, StopNow), the attempts have until Options.StopTimeout (no
// limit for 0), or until StopNow: then each is interrupted (its context
// cancelled with the cause ErrInterrupted), and one whose handler has not
// returned a second after is abandoned: left reserved, without an
// outcome, and the worker stops without it (see abandon).
func (w *worker) finish(stopped context.Context) (abandoned int) {
	ended := make(chan struct{})
	go func() {
		w.handlers.Wait()
		close(ended)
	}()
	stopping := stopped.Done()
	var deadline <-chan time.Time
	for waiting := true; waiting; {
		select {
		case <-ended:
			return 0
		case <-stopping:
			stopping = nil
			if w.opts.StopTimeout > 0 {
				t := time.NewTimer(w.opts.StopTimeout)
				defer t.Stop()
				deadline = t.C
			}
		case <-deadline:
			waiting = false
		case <-w.opts.StopNow:
			waiting = false
		}
	}
	for _, s := range w.slotList() {
		if j := s.interrupt(); j != nil {
			w.log.Info("interrupting a running job: the worker is stopping", "name", j.Name, "job_id", j.ID, "queue", j.Queue, "attempt", j.Attempts)
		}
	}
	select {
	case <-ended:
		return 0
	case <-time.After(abandonAfter):
	}
	n := w.abandon()
	<-ended // the others, recording their outcomes
	return n
}

// interrupt cancels the current attempt with the cause ErrInterrupted,
// unless a cancel request did first or its handler already returned, and
// returns its job (nil for none).
func (s *slot) interrupt() *driver.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil || s.cancelled || s.returned {
		return nil
	}
	s.interrupted = true
	s.cancel(ErrInterrupted)
	return s.current
}

// abandon gives up the attempts still running after their interruption:
// their handlers ignore their context. Each stays reserved without an
// outcome, its handler goes on until it returns or the process ends, and
// the worker leaves its row in the registry (see startHeartbeats): the
// job is taken over, as a killed worker's is, once the worker's last
// heartbeat is its rescue time old, and its attempt counts.
func (w *worker) abandon() (n int) {
	for _, s := range w.slotList() {
		a := s.attempt.Load()
		if a == 0 || !s.attempt.CompareAndSwap(a, 0) {
			continue
		}
		job := s.job
		w.log.Error("job handler still running a second after it was interrupted; the worker stops without it, and the job is taken over once this worker's heartbeat is queue.rescue_after old",
			"name", job.Name, "job_id", job.ID, "queue", job.Queue, "attempt", job.Attempts)
		w.abandoned.Add(1)
		w.handlers.Done() // the abandoned slot's
		n++
	}
	return n
}

// backToWait puts back to wait the job of an attempt interrupted by a
// stop after ms, its attempt given back, and logs it. The attempt is kept
// in the job's history, and the job is due from now: the wait of its
// next attempt counts from the interruption, not over this one's run.
func (w *worker) backToWait(job *driver.Job, ms int64) {
	var acted bool
	kept := driver.Failure{Attempt: job.Attempts, At: w.cfg.Clock.Now().UnixMilli(), Ms: ms, Worker: job.ReservedBy, Interrupted: true}
	err := retried(func() (err error) {
		acted, err = w.cfg.Store.Interrupt(w.jobCtx, job.ID, job.Attempts, kept)
		return err
	})
	if acted {
		w.putBack(job)
	}
	w.count(job, &w.interrupted, Interrupted, ms, acted, err)
	attrs := append(attemptAttrs(make([]slog.Attr, 0, 8), job, ms), slog.String("outcome", "interrupted"))
	level, attrs := recorded(slog.LevelWarn, attrs, acted, err)
	w.logAttempt(level, attrs)
}
