package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/navree/navree/queue/internal/driver"
)

// WorkOptions say which jobs [Queue.Work] runs and when it stops. Zero
// fields take the queue's configuration.
type WorkOptions struct {
	// Queues to take jobs from, highest priority first; default the
	// queue.queues setting.
	Queues []string
	// Workers is how many jobs run at once; default queue.workers.
	Workers int
	// Once runs a single job, if one is available, and stops.
	Once bool
	// MaxJobs stops the worker after it has started this many attempts;
	// 0 for no limit.
	MaxJobs int
	// MaxTime stops the worker taking new jobs after this long; 0 for no
	// limit.
	MaxTime time.Duration
	// StopWhenEmpty stops the worker when no job is available now.
	// Delayed jobs and jobs released for a later retry do not count.
	StopWhenEmpty bool
}

// WorkStats counts the attempts a worker ran, by outcome.
type WorkStats struct {
	Processed int // attempts run
	Succeeded int
	Released  int // failed and put back for a retry
	Failed    int // failed for good: moved to the failed jobs
}

func (s WorkStats) String() string {
	return fmt.Sprintf("Processed %d job attempt(s): %d succeeded, %d released for retry, %d failed.",
		s.Processed, s.Succeeded, s.Released, s.Failed)
}

// MaxErrorLen bounds the error kept with a released or failed job, in
// bytes; a longer one is cut and ends in "…".
const MaxErrorLen = 8 << 10

// abandonAfter is how long a handler has to return once its timeout has
// passed before the worker gives up on it.
const abandonAfter = time.Second

// sweepEveryMs is how often, by the queue's clock, a worker looks for
// reservations gone stale even while it has work.
const sweepEveryMs = 1000

// RunPending runs every job of the worker queues (queue.queues) that is
// available now, one at a time, and returns what it did. Jobs released
// for a retry and delayed jobs stay queued.
func (q *Queue) RunPending(ctx context.Context) (WorkStats, error) {
	return q.Work(ctx, WorkOptions{Workers: 1, StopWhenEmpty: true})
}

// Work runs jobs until ctx ends or a limit of o is reached, then waits for
// the jobs it runs to finish and returns what it did. Ending ctx never
// cuts a running job off: only the job's own timeout does.
//
// Errors of the database are logged and retried after the poll interval;
// with StopWhenEmpty (and so RunPending) Work returns them instead.
func (q *Queue) Work(ctx context.Context, o WorkOptions) (WorkStats, error) {
	if len(o.Queues) == 0 {
		o.Queues = q.cfg.Queues
	}
	for _, name := range o.Queues {
		if err := checkQueue(name); err != nil {
			return WorkStats{}, err
		}
	}
	if o.Workers == 0 {
		o.Workers = q.cfg.Workers
	}
	if o.Once {
		o.Workers, o.MaxJobs, o.StopWhenEmpty = 1, 1, true
	}
	if o.Workers < 0 || o.MaxJobs < 0 || o.MaxTime < 0 {
		return WorkStats{}, fmt.Errorf("queue: workers (%d), max jobs (%d) and max time (%s) must not be negative", o.Workers, o.MaxJobs, o.MaxTime)
	}
	takeCtx := ctx
	if o.MaxTime > 0 {
		var cancel context.CancelFunc
		takeCtx, cancel = context.WithTimeout(ctx, o.MaxTime)
		defer cancel()
	}
	w := &worker{q: q, opts: o, jobCtx: context.WithoutCancel(ctx), log: q.logger.With("logger", "navree.job")}
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() { w.loop(takeCtx) })
	}
	wg.Wait()
	return w.stats(), w.err
}

// worker is one call of Work: its loops share the limits and the counts.
type worker struct {
	q      *Queue
	opts   WorkOptions
	jobCtx context.Context // running jobs outlive the stop signal
	log    *slog.Logger

	started                               atomic.Int64 // attempts claimed, for MaxJobs
	retryAt                               atomic.Int64 // latest job put back for an immediate retry (ms)
	processed, succeeded, released, faild atomic.Int64

	mu  sync.Mutex
	err error
}

func (w *worker) stats() WorkStats {
	return WorkStats{Processed: int(w.processed.Load()), Succeeded: int(w.succeeded.Load()),
		Released: int(w.released.Load()), Failed: int(w.faild.Load())}
}

func (w *worker) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// loop takes and runs jobs until ctx ends or a limit is reached.
func (w *worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		if n := w.started.Add(1); w.opts.MaxJobs > 0 && n > int64(w.opts.MaxJobs) {
			w.started.Add(-1)
			return
		}
		wake := w.q.wakeup() // before looking, so a dispatch right after is not missed
		// Not ctx: a reservation cut off halfway would strand its job until takeover.
		job, lookedAt, err := w.q.next(w.jobCtx, w.opts.Queues)
		if job == nil {
			w.started.Add(-1)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			w.log.ErrorContext(ctx, "reserve a job", "error", err)
			if w.opts.StopWhenEmpty {
				w.setErr(fmt.Errorf("queue: reserve a job: %w", err))
				return
			}
			w.pause(ctx, wake)
		case job == nil && w.opts.StopWhenEmpty:
			// Another loop may have put a job back for an immediate retry
			// after this one read the clock (it can wait a while for
			// SQLite's lock): look again before calling the queue empty.
			if r := w.retryAt.Load(); r > lookedAt && r <= w.q.clock.Now().UnixMilli() {
				continue
			}
			return
		case job == nil:
			w.pause(ctx, wake)
		case ctx.Err() != nil:
			// Stopped while reserving: give the job back untouched.
			w.started.Add(-1)
			if _, err := w.q.store.Unreserve(w.jobCtx, job.ID, job.Attempts); err != nil {
				w.log.Error("give back a job reserved while stopping", "job_id", job.ID, "error", err)
			}
			return
		default:
			w.run(job)
		}
	}
}

// pause waits the poll interval, or less when a job is dispatched in this
// process or ctx ends.
func (w *worker) pause(ctx context.Context, wake <-chan struct{}) {
	t := time.NewTimer(time.Duration(w.q.cfg.PollIntervalMs) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	case <-ctx.Done():
	}
}

// next reserves the next job: from the first queue, in priority order,
// that has one available; and, once a second by the queue's clock, a job
// whose worker presumably died, before anything else.
// It also returns the time it looked at.
func (q *Queue) next(ctx context.Context, queues []string) (*driver.Job, int64, error) {
	now := q.clock.Now().UnixMilli()
	if last := q.lastSweep.Load(); now-last >= sweepEveryMs && q.lastSweep.CompareAndSwap(last, now) {
		for _, name := range queues {
			if j, err := q.store.TakeOver(ctx, name, now); j != nil || err != nil {
				return j, now, err
			}
		}
	}
	for _, name := range queues {
		if j, err := q.store.Reserve(ctx, name, now); j != nil || err != nil {
			return j, now, err
		}
	}
	return nil, now, nil
}

// wakeup returns a channel that closes at the next dispatch in this
// process.
func (q *Queue) wakeup() <-chan struct{} {
	q.wakeMu.Lock()
	defer q.wakeMu.Unlock()
	return q.wake
}

// notify wakes the idle workers of this process.
func (q *Queue) notify(context.Context) {
	q.wakeMu.Lock()
	defer q.wakeMu.Unlock()
	close(q.wake)
	q.wake = make(chan struct{})
}

// attemptError is a failed attempt: its message, and whether retrying can
// help.
type attemptError struct {
	msg       string
	permanent bool
	stack     string // for a panic
}

// run runs one attempt of job and records its outcome.
func (w *worker) run(job *driver.Job) {
	start := time.Now()
	jc := JobContext{JobID: job.ID, Name: job.Name, Queue: job.Queue, Attempt: job.Attempts}
	failure := w.call(job, jc)
	ms := time.Since(start).Milliseconds()
	ctx := w.jobCtx
	now := w.q.clock.Now().UnixMilli()
	attrs := []any{"name", job.Name, "job_id", job.ID, "queue", job.Queue, "attempt", job.Attempts, "duration_ms", ms}

	var acted bool
	var err error
	var level slog.Level
	switch {
	case failure == nil:
		acted, err = w.q.store.Complete(ctx, job.ID, job.Attempts)
		w.succeeded.Add(1)
		level, attrs = slog.LevelInfo, append(attrs, "outcome", "succeeded")
	case !failure.permanent && job.Attempts < job.MaxAttempts:
		backoff, perr := ParseBackoff(job.Backoff)
		if perr != nil {
			backoff = DefaultBackoff
		}
		delay := backoff.Delay(job.Attempts)
		acted, err = w.q.store.Release(ctx, job.ID, job.Attempts, now+ceilMs(delay), truncate(failure.msg))
		if acted && ceilMs(delay) == 0 {
			w.retryAt.Store(max(w.retryAt.Load(), now))
			w.q.notify(ctx) // idle loops need not wait a poll for it
		}
		w.released.Add(1)
		level, attrs = slog.LevelWarn, append(attrs, "outcome", "released", "retry_in_secs", delay.Seconds(), "error", failure.msg)
	default:
		acted, err = w.q.store.Fail(ctx, job.ID, job.Attempts, truncate(failure.msg), now)
		w.faild.Add(1)
		level, attrs = slog.LevelError, append(attrs, "outcome", "failed", "error", failure.msg)
	}
	w.processed.Add(1)
	if failure != nil && failure.stack != "" {
		attrs = append(attrs, "stack", failure.stack)
	}
	switch {
	case err != nil:
		attrs = append(attrs, "record_error", err.Error())
		level = slog.LevelError
	case !acted:
		// Another worker took the job over (this one was presumed dead):
		// its attempt is the one that counts.
		attrs = append(attrs, "reservation_lost", true)
		level = max(level, slog.LevelWarn)
	}
	w.log.Log(ctx, level, "job attempt", attrs...)
}

// call runs the job's handler, cut off after the job's timeout, and turns
// an error, a panic or a timeout into a failure.
func (w *worker) call(job *driver.Job, jc JobContext) *attemptError {
	reg, ok := w.q.jobs[job.Name]
	if !ok {
		return &attemptError{msg: fmt.Sprintf("no handler for job type %q in this binary", job.Name), permanent: true}
	}
	ctx := w.jobCtx
	if job.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(job.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	done := make(chan *attemptError, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- &attemptError{msg: fmt.Sprintf("panic: %v", p), stack: string(debug.Stack())}
			}
		}()
		err := reg.handle(ctx, job.Payload, jc)
		var perr *PayloadError
		switch {
		case err == nil:
			done <- nil
		case errors.As(err, &perr):
			done <- &attemptError{msg: err.Error(), permanent: true}
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			done <- &attemptError{msg: fmt.Sprintf("timed out after %s: %v", time.Duration(job.TimeoutMs)*time.Millisecond, err)}
		default:
			done <- &attemptError{msg: err.Error()}
		}
	}()
	select {
	case failure := <-done:
		return failure
	case <-ctx.Done():
	}
	grace := time.NewTimer(abandonAfter)
	defer grace.Stop()
	select {
	case failure := <-done: // it stopped when its context ended
		return failure
	case <-grace.C:
		// The handler ignores its context: give it up and move on. It goes
		// on running in the background until it returns.
		w.log.Error("job handler still running after its timeout; abandoned", "name", job.Name, "job_id", job.ID)
		return &attemptError{msg: fmt.Sprintf("timed out after %s", time.Duration(job.TimeoutMs)*time.Millisecond)}
	}
}

// truncate cuts an error to MaxErrorLen bytes, on a rune boundary.
func truncate(s string) string {
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}
