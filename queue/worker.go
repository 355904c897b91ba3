package queue

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/navree/navree/app/term"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/worker"
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
	// StopWhenEmpty stops the worker once no job is available now and
	// none is running. Delayed jobs and jobs released for a later retry
	// do not count.
	StopWhenEmpty bool
	// Progress, when set, is called with the counts so far each time an
	// attempt ends, from the worker's goroutines, several at once: keep it
	// quick. queue:work draws its status line on a terminal from it.
	Progress func(WorkStats)
	// Heartbeat, when set, is called after each heartbeat of the worker's
	// registration (the first before it takes a job) with its error: nil
	// when the worker is registered, so the store answers. queue:work
	// --health-addr answers /readyz from it.
	Heartbeat func(err error)
	// StopTimeout is how long the running jobs have to end once the
	// worker is told to stop (ctx ends, or a restart is requested): then
	// each is interrupted, its context cancelled with the cause
	// [ErrInterrupted], and its job put back on its queue without
	// spending the attempt, whatever the handler returns (nil too); a handler that has not returned a second
	// after is left running, its job taken over once the worker's
	// heartbeat is queue.rescue_after old. Default queue.stop_timeout;
	// negative for no deadline.
	StopTimeout time.Duration
	// StopNow, once closed, stops the worker at once: it takes no new
	// job and interrupts the running ones, as at StopTimeout. queue:work
	// closes it at a second SIGINT or SIGTERM.
	StopNow <-chan struct{}
	// OnlyKnownTypes takes only the jobs of the types q has handlers for
	// (their aliases too), leaving the others waiting for a worker that
	// knows them; default queue.only_known_types.
	OnlyKnownTypes bool
	// Restarting, when set, is called once a restart is requested of the
	// worker ([Inspector.Restart]), as it stops taking jobs: queue:work
	// says so, and answers /readyz 503.
	Restarting func()
}

// WorkStats counts the attempts a worker ran, by outcome.
type WorkStats struct {
	Processed int // attempts run
	Succeeded int
	Released  int // failed and put back for a retry
	Failed    int // failed for good: moved to the failed jobs
	// Snoozed counts the attempts whose handler snoozed (see [Snooze]):
	// their jobs wait again, the attempt not spent.
	Snoozed int
	// Lost counts the attempts whose outcome was not kept: another worker
	// had taken their job over (this one was presumed dead), or the
	// database could not store it. Their jobs run again (or, after their
	// last attempt, fail).
	Lost int
	// Interrupted counts the attempts interrupted at the stop deadline
	// ([WorkOptions.StopTimeout]): their jobs wait again, the attempt not
	// spent. Abandoned counts those whose handler had not returned a
	// second after: left reserved, taken over once the worker's
	// heartbeat is queue.rescue_after old.
	Interrupted, Abandoned int
	// Errors are the first [MaxWorkErrors] failed attempts, in the order
	// they ended, each with its error: what a test that runs jobs shows
	// when one fails. Work's Progress is given the counts alone.
	Errors []AttemptError
}

// MaxWorkErrors bounds [WorkStats.Errors]: a worker that runs for days
// keeps the first failures, not every one (the log has every one).
const MaxWorkErrors = 10

// AttemptError is an attempt of a job that failed.
type AttemptError struct {
	JobID       string
	Name        string // the job type
	Queue       string
	Attempt     int // 1 for the first
	MaxAttempts int
	// Retried says that the job went back on its queue for another
	// attempt; false, that it failed for good (moved to the failed jobs).
	Retried bool
	// Error is the error kept with the job: the handler's error text, or
	// "panic: …", "timed out after …: …", "cancelled", "no handler for
	// job type …", at most [MaxErrorLen] bytes.
	Error string
}

// String reads "contacts.export job ID, attempt 1 of 3, released for a
// retry: ERROR" (or "…, failed: ERROR" when it failed for good).
func (e AttemptError) String() string {
	outcome := "failed"
	if e.Retried {
		outcome = "released for a retry"
	}
	return fmt.Sprintf("%s job %s, attempt %d of %d, %s: %s", e.Name, e.JobID, e.Attempt, e.MaxAttempts, outcome, e.Error)
}

// String is the summary queue:work prints, then each of the Errors on a
// line of its own; the lost attempts appear only when there are some.
// A test that prints the stats of a run with %v shows why jobs failed.
func (s WorkStats) String() string { return s.summary(io.Discard) + s.errorLines() }

// errorLines are the Errors, each on a line of its own after a newline,
// with a last line saying that more failed when the kept ones are all.
func (s WorkStats) errorLines() string {
	var b strings.Builder
	for _, e := range s.Errors {
		b.WriteString("\n" + e.String())
	}
	if len(s.Errors) == MaxWorkErrors && s.Released+s.Failed+s.Lost > MaxWorkErrors {
		fmt.Fprintf(&b, "\n(the first %d failed attempts; the log has every one)", MaxWorkErrors)
	}
	return b.String()
}

// summary is String, coloured for w where it may be (term.Color): the
// failures red, the releases yellow, when there are some.
func (s WorkStats) summary(w io.Writer) string {
	some := func(n int, style term.Style, text string) string {
		if n == 0 {
			return text
		}
		return term.Paint(w, style, text)
	}
	out := fmt.Sprintf("Processed %d job attempt(s): %d succeeded, %s, %s", s.Processed, s.Succeeded,
		some(s.Released, term.Yellow, fmt.Sprintf("%d released for retry", s.Released)), some(s.Failed, term.Red, fmt.Sprintf("%d failed", s.Failed)))
	if s.Snoozed > 0 {
		out += fmt.Sprintf(", %d snoozed", s.Snoozed)
	}
	if s.Interrupted > 0 {
		out += ", " + term.Paint(w, term.Yellow, fmt.Sprintf("%d interrupted by the stop (back on their queues)", s.Interrupted))
	}
	if s.Abandoned > 0 {
		out += ", " + term.Paint(w, term.Red, fmt.Sprintf("%d left running at the stop (taken over after queue.rescue_after)", s.Abandoned))
	}
	switch {
	case s.Lost == 1:
		out += ", " + term.Paint(w, term.Red, "1 lost its reservation")
	case s.Lost > 1:
		out += ", " + term.Paint(w, term.Red, fmt.Sprintf("%d lost their reservation", s.Lost))
	}
	return out + "."
}

// MaxErrorLen bounds the error kept with a released or failed job, in
// bytes; a longer one is cut and ends in "…".
const MaxErrorLen = worker.MaxErrorLen

// RunPending runs every job of the worker queues (queue.queues) that is
// available now, one at a time, and returns what it did. Jobs released
// for a retry and delayed jobs stay queued.
func (q *Queue) RunPending(ctx context.Context) (WorkStats, error) {
	return q.Work(ctx, WorkOptions{Workers: 1, StopWhenEmpty: true})
}

// Work runs jobs until ctx ends, a restart is requested or a limit of o
// is reached, then waits for the jobs it runs to finish, stores their
// outcomes and returns what it did. Ending ctx cuts no running job off
// but at o.StopTimeout (queue.stop_timeout; by default none: only the
// job's own timeout does), where the jobs still running go back on their
// queues without spending an attempt. After a restart request
// ([Inspector.Restart], queue:restart) it returns [ErrRestart].
//
// One goroutine reserves jobs for the free handlers, as many as are free
// in one statement; o.Workers goroutines run them; successes are stored
// in batches (flushed every couple of milliseconds or at 100).
//
// Errors of the database are logged and retried after the poll interval;
// with StopWhenEmpty (and so RunPending) Work returns them instead.
func (q *Queue) Work(ctx context.Context, o WorkOptions) (WorkStats, error) {
	o = q.workOptions(o)
	for _, name := range o.Queues {
		if err := checkQueue(name); err != nil {
			return WorkStats{}, err
		}
	}
	if q.meters != nil {
		q.meters.know(o.Queues...) // their gauges read 0 while they have no job
	}
	if o.Workers < 0 || o.MaxJobs < 0 || o.MaxTime < 0 {
		return WorkStats{}, fmt.Errorf("queue: workers (%d), max jobs (%d) and max time (%s) must not be negative", o.Workers, o.MaxJobs, o.MaxTime)
	}
	if o.Workers > MaxWorkers {
		return WorkStats{}, fmt.Errorf("queue: workers is %d; want 1 to %d", o.Workers, MaxWorkers)
	}
	wo := worker.Options{Queues: o.Queues, Workers: o.Workers, MaxJobs: o.MaxJobs, MaxTime: o.MaxTime, StopWhenEmpty: o.StopWhenEmpty, Beat: o.Heartbeat,
		StopTimeout: max(o.StopTimeout, 0), StopNow: o.StopNow, Restarting: o.Restarting}
	wo.Only = q.knownTypes(o.OnlyKnownTypes)
	if o.Progress != nil {
		wo.Counted = func(s worker.Stats) { o.Progress(workStats(s)) }
	}
	var mu sync.Mutex
	var failed []AttemptError
	wo.Failed = func(job *driver.Job, retry bool, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if len(failed) < MaxWorkErrors {
			failed = append(failed, AttemptError{JobID: job.ID, Name: job.Name, Queue: job.Queue, Attempt: job.Attempts,
				MaxAttempts: job.MaxAttempts, Retried: retry, Error: msg})
		}
	}
	stats, err := q.work(ctx, wo)
	mu.Lock() // Run has returned: every attempt is recorded, the watchdog's too
	defer mu.Unlock()
	stats.Errors = failed
	return stats, err
}

// workOptions are o with the defaults of q's configuration: its queues,
// its workers, and one worker for one job with Once.
func (q *Queue) workOptions(o WorkOptions) WorkOptions {
	if len(o.Queues) == 0 {
		o.Queues = q.cfg.Queues
	}
	if o.Workers == 0 {
		o.Workers = q.cfg.Workers
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = q.cfg.StopTimeout
	}
	o.OnlyKnownTypes = o.OnlyKnownTypes || q.cfg.OnlyKnownTypes
	if o.Once {
		o.Workers, o.MaxJobs, o.StopWhenEmpty = 1, 1, true
	}
	return o
}

// knownTypes are, when on, the job types q has handlers for, their
// aliases too: those a worker of only known types takes. Nil when off.
func (q *Queue) knownTypes(on bool) *driver.Names {
	if !on {
		return nil
	}
	return driver.NewNames(slices.Collect(maps.Keys(q.table.Load().handles)))
}

// workStats are the engine's counts as WorkStats.
func workStats(s worker.Stats) WorkStats {
	return WorkStats{Processed: s.Succeeded + s.Released + s.Failed + s.Snoozed + s.Lost + s.Interrupted + s.Abandoned, Succeeded: s.Succeeded,
		Released: s.Released, Failed: s.Failed, Snoozed: s.Snoozed, Lost: s.Lost, Interrupted: s.Interrupted, Abandoned: s.Abandoned}
}

// work runs the engine on q with o.
func (q *Queue) work(ctx context.Context, o worker.Options) (WorkStats, error) {
	s, err := worker.Run(ctx, worker.Config{
		Store:          q.store,
		Handler:        q.handler,
		Clock:          clocks{q},
		Log:            q.logger.With("logger", "navree.job"),
		Waker:          q.waker,
		PollInterval:   time.Duration(q.cfg.PollIntervalMs) * time.Millisecond,
		Sweeps:         &q.lastSweep,
		Pauses:         &q.pauses,
		Cancels:        &q.cancels,
		OnListen:       q.onListen,
		Observer:       q.observer(),
		Registration:   q.registration(),
		HeartbeatEvery: q.heartbeatEvery,
		KeepSucceeded:  q.cfg.KeepSucceeded,
		Prunes:         &q.lastPrune,
		MaxSnoozes:     q.cfg.MaxSnoozes,
		QueueRates:     q.queueRates,
	}, o)
	return workStats(s), err
}

// handler returns the engine's handle of a job type.
func (q *Queue) handler(name string) (worker.Handle, bool) {
	h, ok := q.table.Load().handles[name]
	return h, ok
}

// handle is the engine's handle of reg: its handler, given the job's
// payload and its JobContext.
func (q *Queue) handle(reg Registration) worker.Handle {
	return func(ctx context.Context, job *driver.Job) error {
		return reg.handle(ctx, job.Payload, JobContext{JobID: job.ID, Name: job.Name, Queue: job.Queue, Attempt: job.Attempts, Meta: job.Meta,
			Flow: job.Flow, Snoozes: job.Snoozes, job: job, q: q})
	}
}

// clocks are the times of a Queue, as the engine reads them.
type clocks struct{ q *Queue }

func (c clocks) Now() time.Time    { return c.q.clock.Now() }
func (c clocks) ReservedAt() int64 { return c.q.reservedAt() }
func (c clocks) Pace() int64       { return c.q.pace() }
