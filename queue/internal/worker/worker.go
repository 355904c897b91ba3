// Package worker is the queue's engine: the loops that run the jobs of
// one call of queue.Work. A fetcher reserves jobs for the free handler
// slots (fetch.go), a prober looks off its path for what its searches
// would miss (probe.go), the slots run attempts and record their outcomes
// (slots.go, attempt.go), a completer stores successes in batches
// (complete.go), and a listener wakes the fetcher at dispatches of other
// processes (wake.go).
package worker

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// Config is what the engine runs on: one per queue, shared by its calls
// of Run.
type Config struct {
	Store driver.Core // the hot path alone: no operator's method
	// Handler returns the handler of a job type, and false when this
	// binary has none.
	Handler func(name string) (Handle, bool)
	Clock   Clock
	Log     *slog.Logger // the navree.job logger
	// Waker is woken at every dispatch of this process.
	Waker        *Waker
	PollInterval time.Duration // how long an idle fetcher waits before it looks again
	// Sweeps is when a worker of the process last looked for stale
	// reservations (on Clock.Pace): they look once a second per process,
	// by whichever worker comes first.
	Sweeps *atomic.Int64
	// OnListen, when set, is called each time a worker listens for other
	// processes' dispatches (tests).
	OnListen func()
	// Pauses is bumped each time this process pauses or resumes a queue:
	// its workers read the paused queues again before they next search.
	Pauses *atomic.Int64
	// Cancels is bumped each time this process asks to cancel a running
	// job: its workers read the cancel requests at once.
	Cancels *atomic.Int64
	// Observer, when set, is told of each attempt's start and stored
	// outcome (the queue's metrics); nil costs nothing.
	Observer Observer
	// Registration, when its ID is set, registers the call in the store's
	// worker registry (Store.Heartbeat) with its queues, concurrency and
	// running jobs, beats its heart every HeartbeatEvery, and deregisters
	// it when it returns.
	Registration   driver.Worker
	HeartbeatEvery time.Duration
	// KeepSucceeded, when positive, keeps the jobs that succeed in the
	// history (succeeded_jobs) for that long: the workers prune what is
	// older once a minute per process (Prunes).
	KeepSucceeded time.Duration
	// Prunes is when a worker of the process last pruned the history (on
	// Clock.Pace).
	Prunes *atomic.Int64
	// QueueRates are the rate limits of queues themselves, by name.
	QueueRates map[string]driver.Rate
	// MaxSnoozes is how many times a job may snooze (Snooze); a job asking
	// once more fails, with an error that says so.
	MaxSnoozes int
}

// Observer is told what the engine does, from several goroutines at once.
type Observer interface {
	// Started is called as an attempt starts, with the context its
	// handler will get; waitMs is how long its job had been due (the
	// queue's clock). The handler gets the context Started returns.
	Started(ctx context.Context, job *driver.Job, waitMs int64) context.Context
	// Ran is called when the attempt's handler returned, with that
	// context and its failure ("" for none).
	Ran(ctx context.Context, job *driver.Job, failure string)
	// Finished is called once an attempt's outcome is stored; an outcome
	// not stored (fenced out, or an error) is not told. ms is how long
	// the handler ran.
	Finished(job *driver.Job, outcome Outcome, ms int64)
}

// Outcome is what became of an attempt.
type Outcome int

// The outcomes of an attempt.
const (
	Succeeded Outcome = iota
	Released          // for a retry
	Failed
	Cancelled   // failed, by a cancel request
	Snoozed     // back to wait, its attempt given back (Snooze)
	Interrupted // back to wait, its attempt given back: the worker stopped at its deadline
)

// Handle runs one attempt of a job. An error made by [Permanent] fails
// the job at once.
type Handle func(ctx context.Context, job *driver.Job) error

// Clock tells a worker the times it reads.
type Clock interface {
	// Now is the wall time: when jobs are due, released, failed.
	Now() time.Time
	// ReservedAt is the time reservations are stamped with and judged
	// stale by, on the clock of reservations: 0 for the driver's own.
	ReservedAt() int64
	// Pace is the time, in ms, that "once a second" is counted in: the
	// monotonic clock, or a clock the test moves.
	Pace() int64
}

// Options say which jobs Run runs and when it stops.
type Options struct {
	Queues        []string // highest priority first
	Workers       int      // handler slots, 1 or more
	MaxJobs       int      // stop after starting this many attempts; 0: no limit
	MaxTime       time.Duration
	StopWhenEmpty bool
	// Quiet leaves successes out of the log (queue:bench).
	Quiet bool
	// Idle, when set, is called each time the fetcher waits with every
	// slot free, once the worker listens for other processes' dispatches
	// where the driver can (queue:bench).
	Idle func()
	// Counted, when set, is called with the counts so far each time an
	// attempt's outcome is counted, from several goroutines at once
	// (queue:work's status line).
	Counted func(Stats)
	// Failed, when set, is called with each attempt that failed, before
	// it is counted, from the goroutine that recorded it: its job, whether
	// the job goes back for a retry, and the error kept with it
	// (queue.Work's WorkStats.Errors).
	Failed func(job *driver.Job, retry bool, msg string)
	// Beat, when set, is called after each heartbeat of the worker's
	// registration with its error (nil: registered).
	Beat func(err error)
	// StopTimeout is how long the running attempts have to end once the
	// worker is told to stop (ctx ends, or a restart is requested): then
	// they are interrupted (see stop.go). 0: no deadline, they run to
	// their end.
	StopTimeout time.Duration
	// StopNow, once closed, stops the worker at once: it takes no more
	// jobs and interrupts the running attempts.
	StopNow <-chan struct{}
	// Only, when set, are the job types the worker takes: it leaves the
	// others waiting, for workers that know them.
	Only *driver.Names
	// Restarting, when set, is called once a restart is requested of the
	// worker, as it stops taking jobs.
	Restarting func()
}

// Stats counts the attempts a worker ran, by outcome.
type Stats struct {
	Succeeded, Released, Failed int
	Snoozed                     int // back to wait without spending an attempt
	Lost                        int // the outcome was not kept: fenced out, or not stored
	// Interrupted counts the attempts interrupted by a stop, their jobs
	// back to wait without spending an attempt; Abandoned those whose
	// handler did not return once interrupted, left reserved.
	Interrupted, Abandoned int
}

// Run runs jobs until ctx ends, a restart is requested or a limit of o
// is reached, then waits for the jobs it runs to finish (until
// o.StopTimeout, when it is told to stop), stores their outcomes and
// returns what it did: with ErrRestart when a restart stopped it. Ending
// ctx does not cut a running job off before o.StopTimeout: only the
// job's own timeout does. Errors of the database are logged and retried
// after the poll interval; with StopWhenEmpty Run returns them instead.
func Run(ctx context.Context, cfg Config, o Options) (Stats, error) {
	stopCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	takeCtx := stopCtx
	if o.MaxTime > 0 {
		var cancel context.CancelFunc
		takeCtx, cancel = context.WithTimeout(stopCtx, o.MaxTime)
		defer cancel()
	}
	if o.StopNow != nil {
		go func() {
			select {
			case <-o.StopNow:
				stop(context.Canceled)
			case <-stopCtx.Done():
			}
		}()
	}
	w := &worker{cfg: cfg, opts: o, jobCtx: context.WithoutCancel(ctx), takeCtx: takeCtx, stop: stop, log: cfg.Log,
		jobs: make(chan *driver.Job, o.Workers), free: make(chan struct{}, o.Workers), slots: make([]*slot, o.Workers),
		cursor: map[string]int64{}, places: map[string]int64{}, sweepNow: true, behind: make([]atomic.Bool, len(o.Queues)),
		features: make(features, len(o.Queues)),
		marks:    make([]driver.Marks, len(o.Queues)), rewind: make([]atomic.Int64, len(o.Queues)),
		probes: make(chan probe, 1), probed: make(chan struct{}, 1), tallies: newTallies(o.Queues)}
	w.placeBack = make([]atomic.Int64, len(o.Queues))
	for i := range w.rewind {
		w.rewind[i].Store(math.MaxInt64)
		w.placeBack[i].Store(math.MaxInt64)
	}
	w.done = newCompleter(w)
	stopListening := w.listen(o.Queues)
	defer stopListening()
	for i := range w.slots {
		w.slots[i] = w.startSlot()
	}
	stopWatching := w.watch()
	stopProbing := w.startProber()
	stopTallies := w.startTallies()
	stopBeating := w.startHeartbeats()
	w.fetch(takeCtx)
	stopProbing()
	close(w.jobs)
	abandoned := w.finish(stopCtx)
	stopWatching()
	w.done.close()
	stopTallies()
	stopBeating(abandoned == 0)
	if err := w.err; err != nil || !errors.Is(context.Cause(stopCtx), ErrRestart) {
		return w.stats(), err
	}
	return w.stats(), ErrRestart
}

// worker is one call of Run.
type worker struct {
	cfg     Config
	opts    Options
	jobCtx  context.Context // running jobs outlive the stop signal
	takeCtx context.Context // ends when the worker takes no more jobs
	// stop tells the worker to stop, with a cause: it takes no more jobs,
	// and the running ones have until Options.StopTimeout.
	stop context.CancelCauseFunc
	log  *slog.Logger
	jobs chan *driver.Job // reserved, for the handlers
	free chan struct{}    // a handler finished a job
	done *completer

	// slots are the handler goroutines; only the watchdog changes the
	// slice, when it replaces an abandoned one.
	slots    []*slot
	slotsMu  sync.Mutex     // held by the watchdog to replace a slot, by others to read them
	handlers sync.WaitGroup // the slots not abandoned
	attempts atomic.Uint64  // numbers the attempts, from 1

	// Owned by the fetcher: by queue, the time up to which it has
	// reserved every job it found waiting, where its next search starts
	// (but for a full one); whether its next search is a full sweep; when
	// it last had the prober look.
	cursor map[string]int64
	// places is, by fair queue, the highest place of a job with a
	// fairness key its searches reserved: where their next search of
	// those starts (see driver.Marks.Place).
	places   map[string]int64
	sweepNow bool
	admitted int // the completer's count of batches that may have let jobs in, as the fetcher last read it
	probedAt int64
	pause    pauses
	// pauseNote is set by the listener when another process paused or
	// resumed a queue; cancelNote when it asked to cancel a running job.
	pauseNote, cancelNote atomic.Bool

	// What the prober found, for the fetcher: by queue (in the order of
	// opts.Queues), a job waiting behind the cursor; a stale reservation.
	behind []atomic.Bool
	stale  atomic.Bool
	// rewind is, by queue, the earliest due time of a limited job of the
	// queue that ended since the fetcher last looked (math.MaxInt64 for
	// none): the next job of its key went in due no earlier, behind the
	// cursor maybe, and the next search starts there.
	rewind []atomic.Int64
	// placeBack is, by queue, the lowest place of a job with a fairness
	// key that this worker put back to wait since the fetcher last looked
	// (released, snoozed or given back; math.MaxInt64 for none): it kept
	// its place, behind the cursor of places maybe, where the next search
	// starts.
	placeBack []atomic.Int64
	// features are, by queue, the features its searches do: with a
	// priority they order by it, with rate limits they leave out the keys
	// whose window is full, with fairness they take the groups in turns.
	features features
	// marks are, by queue, the marks its last search read and wrote (see
	// driver.Marks): how long until the first full window of a rate
	// limit reopens, whether it took every job without a fairness key.
	// Fields, so that a search allocates no place for them.
	marks []driver.Marks
	// probeEveryMs is how long the fetcher lets pass between two probes:
	// a second, or longer where probes are slow (see startProber).
	probeEveryMs atomic.Int64
	probes       chan probe    // to the prober, when it is free
	probed       chan struct{} // from the prober: it found something

	// lease is the worker's registration, nil when it has none.
	lease *lease

	succeeded, released, failed, snoozed, lost, interrupted, abandoned atomic.Int64
	tallies                                                            map[string]*tally // by queue, since last added to the store
	listening                                                          atomic.Bool       // for opts.idle

	mu  sync.Mutex
	err error
}

func (w *worker) stats() Stats {
	return Stats{Succeeded: int(w.succeeded.Load()), Released: int(w.released.Load()), Failed: int(w.failed.Load()),
		Snoozed: int(w.snoozed.Load()), Lost: int(w.lost.Load()), Interrupted: int(w.interrupted.Load()), Abandoned: int(w.abandoned.Load())}
}

func (w *worker) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// limitedEnded tells the fetcher that job, of a concurrency limit, left
// the queue: the next job of its key went in, due no earlier than job
// (see driver.Job.LimitKey), and its queue's next search starts there.
func (w *worker) limitedEnded(job *driver.Job) {
	i := slices.Index(w.opts.Queues, job.Queue)
	if i < 0 {
		return
	}
	lower(&w.rewind[i], job.AvailableAt)
}

// putBack tells the fetcher that job, with a fairness key, waits again
// with its place, and its queue's next search of places starts there.
func (w *worker) putBack(job *driver.Job) {
	if i := slices.Index(w.opts.Queues, job.Queue); i >= 0 && job.FairKey != "" {
		lower(&w.placeBack[i], job.FairSeq)
	}
}

// lower sets r to v if v is lower.
func lower(r *atomic.Int64, v int64) {
	for {
		cur := r.Load()
		if v >= cur || r.CompareAndSwap(cur, v) {
			return
		}
	}
}
