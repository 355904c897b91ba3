package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
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
	// StopWhenEmpty stops the worker once no job is available now and
	// none is running. Delayed jobs and jobs released for a later retry
	// do not count.
	StopWhenEmpty bool

	quiet bool // successes are not logged (queue:bench)
	// idle is called each time the fetcher waits with every handler free,
	// once the worker listens for other processes' dispatches, where the
	// driver can (queue:bench).
	idle func()
}

// WorkStats counts the attempts a worker ran, by outcome.
type WorkStats struct {
	Processed int // attempts run
	Succeeded int
	Released  int // failed and put back for a retry
	Failed    int // failed for good: moved to the failed jobs
	// Lost counts the attempts whose outcome was not kept: another worker
	// had taken their job over (this one was presumed dead), or the
	// database could not store it. Their jobs run again (or, after their
	// last attempt, fail).
	Lost int
}

// String is the summary queue:work prints; the lost attempts appear only
// when there are some.
func (s WorkStats) String() string {
	out := fmt.Sprintf("Processed %d job attempt(s): %d succeeded, %d released for retry, %d failed",
		s.Processed, s.Succeeded, s.Released, s.Failed)
	switch {
	case s.Lost == 1:
		out += ", 1 lost its reservation"
	case s.Lost > 1:
		out += fmt.Sprintf(", %d lost their reservation", s.Lost)
	}
	return out + "."
}

// MaxErrorLen bounds the error kept with a released or failed job, in
// bytes; a longer one is cut and ends in "…".
const MaxErrorLen = 8 << 10

// abandonAfter is how long a handler has to return once its timeout has
// passed before the worker gives up on it.
const abandonAfter = time.Second

// sweepEveryMs is how often, by the queue's clock, a worker looks for
// reservations gone stale and for jobs behind its cursors, even while it
// has work.
const sweepEveryMs = 1000

// RunPending runs every job of the worker queues (queue.queues) that is
// available now, one at a time, and returns what it did. Jobs released
// for a retry and delayed jobs stay queued.
func (q *Queue) RunPending(ctx context.Context) (WorkStats, error) {
	return q.Work(ctx, WorkOptions{Workers: 1, StopWhenEmpty: true})
}

// Work runs jobs until ctx ends or a limit of o is reached, then waits for
// the jobs it runs to finish, stores their outcomes and returns what it
// did. Ending ctx never cuts a running job off: only the job's own timeout
// does.
//
// One goroutine reserves jobs for the free handlers, as many as are free
// in one statement; o.Workers goroutines run them; successes are stored
// in batches (flushed every couple of milliseconds or at 100).
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
	if o.Workers > MaxWorkers {
		return WorkStats{}, fmt.Errorf("queue: workers is %d; want 1 to %d", o.Workers, MaxWorkers)
	}
	takeCtx := ctx
	if o.MaxTime > 0 {
		var cancel context.CancelFunc
		takeCtx, cancel = context.WithTimeout(ctx, o.MaxTime)
		defer cancel()
	}
	w := &worker{q: q, opts: o, jobCtx: context.WithoutCancel(ctx), takeCtx: takeCtx, log: q.logger.With("logger", "navree.job"),
		jobs: make(chan *driver.Job, o.Workers), free: make(chan struct{}, o.Workers), slots: make([]*slot, o.Workers),
		cursor: map[string]int64{}, sweepNow: true, behind: make([]atomic.Bool, len(o.Queues)),
		probes: make(chan probe, 1), probed: make(chan struct{}, 1)}
	w.done = newCompleter(w)
	stopListening := w.listen(o.Queues)
	defer stopListening()
	for i := range w.slots {
		w.slots[i] = w.startSlot()
	}
	stopWatching := w.watch()
	stopProbing := w.startProber()
	w.fetch(takeCtx)
	stopProbing()
	close(w.jobs)
	w.handlers.Wait()
	stopWatching()
	w.done.close()
	return w.stats(), w.err
}

// worker is one call of Work.
type worker struct {
	q       *Queue
	opts    WorkOptions
	jobCtx  context.Context // running jobs outlive the stop signal
	takeCtx context.Context // ends when the worker takes no more jobs
	log     *slog.Logger
	jobs    chan *driver.Job // reserved, for the handlers
	free    chan struct{}    // a handler finished a job
	done    *completer

	// slots are the handler goroutines; only the watchdog changes the
	// slice, when it replaces an abandoned one.
	slots    []*slot
	handlers sync.WaitGroup // the slots not abandoned
	attempts atomic.Uint64  // numbers the attempts, from 1

	// Owned by the fetcher: by queue, the time up to which it has
	// reserved every job it found waiting, where its next search starts
	// (but for a full one); whether its next search is a full sweep; when
	// it last had the prober look.
	cursor   map[string]int64
	sweepNow bool
	probedAt int64

	// What the prober found, for the fetcher: by queue (in the order of
	// opts.Queues), a job waiting behind the cursor; a stale reservation.
	behind []atomic.Bool
	stale  atomic.Bool
	// probeEveryMs is how long the fetcher lets pass between two probes:
	// a second, or longer where probes are slow (see startProber).
	probeEveryMs atomic.Int64
	probes       chan probe    // to the prober, when it is free
	probed       chan struct{} // from the prober: it found something

	succeeded, released, failed, lost atomic.Int64
	listening                         atomic.Bool // for opts.idle

	mu  sync.Mutex
	err error
}

func (w *worker) stats() WorkStats {
	s := WorkStats{Succeeded: int(w.succeeded.Load()), Released: int(w.released.Load()), Failed: int(w.failed.Load()), Lost: int(w.lost.Load())}
	s.Processed = s.Succeeded + s.Released + s.Failed + s.Lost
	return s
}

func (w *worker) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// listener is a driver that hears of dispatches in other processes.
type listener interface {
	Listen(ctx context.Context, wake func(queue string), connected func(), failed func(error))
}

// listen wakes the fetcher when another process dispatches a job on one
// of queues, for as long as the worker runs; polling stays the fallback.
func (w *worker) listen(queues []string) (stop func()) {
	l, ok := w.q.store.(listener)
	if !ok {
		w.listening.Store(true)
		return func() {}
	}
	ctx, cancel := context.WithCancel(w.jobCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.listening.Store(true) // it returned: it will not listen
		l.Listen(ctx,
			func(queue string) {
				if slices.Contains(queues, queue) {
					w.q.notify(ctx)
				}
			},
			func() {
				w.listening.Store(true)
				if w.q.onListen != nil {
					w.q.onListen()
				}
			},
			func(err error) {
				w.log.Warn("listen for dispatches; polling until it reconnects", "error", err)
			})
	}()
	return func() {
		cancel()
		<-done
	}
}

func (w *worker) unreserve(job *driver.Job) {
	if _, err := w.q.store.Unreserve(w.jobCtx, job.ID, job.Attempts); err != nil {
		w.log.Error("give back a job reserved while stopping", "job_id", job.ID, "error", err)
	}
}

// fetch reserves jobs for the free handlers until ctx ends or a limit is
// reached: as many at once as handlers are free, from the first queue in
// priority order that has some.
func (w *worker) fetch(ctx context.Context) {
	free, claimed := w.opts.Workers, 0
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		for drained := false; !drained; { // count the handlers that came free
			select {
			case <-w.free:
				free++
			default:
				drained = true
			}
		}
		if ctx.Err() != nil {
			return
		}
		limit := free
		if w.opts.MaxJobs > 0 {
			if limit = min(limit, w.opts.MaxJobs-claimed); limit <= 0 && free == w.opts.Workers {
				return
			}
		}
		if limit <= 0 { // every handler is busy
			select {
			case <-w.free:
				free++
			case <-ctx.Done():
				return
			}
			continue
		}
		wake := w.q.wakeup() // before looking, so a dispatch right after is not missed
		// Not ctx: a reservation cut off halfway would strand its jobs until takeover.
		jobs, swept, err := w.next(w.jobCtx, limit)
		switch {
		case err != nil:
			w.log.ErrorContext(ctx, "reserve jobs", "error", err)
			if w.opts.StopWhenEmpty {
				w.setErr(fmt.Errorf("queue: reserve jobs: %w", err))
				return
			}
		case ctx.Err() != nil:
			// Stopped while reserving: give the jobs back untouched.
			for _, job := range jobs {
				w.unreserve(job)
			}
			return
		}
		for _, job := range jobs {
			w.jobs <- job // never blocks: there are free handlers for each
		}
		free -= len(jobs)
		claimed += len(jobs)
		if len(jobs) == limit && err == nil {
			continue // there may be more
		}
		if len(jobs) == 0 && err == nil && w.opts.StopWhenEmpty && free == w.opts.Workers {
			if !swept { // first a full sweep, for the jobs behind the cursors
				w.sweepNow = true
				continue
			}
			// Nothing runs, so nothing can come back for a retry: empty.
			return
		}
		if w.opts.idle != nil && free == w.opts.Workers && w.listening.Load() {
			w.opts.idle()
		}
		poll.Reset(time.Duration(w.q.cfg.PollIntervalMs) * time.Millisecond)
		select {
		case <-poll.C:
		case <-wake:
		case <-w.probed:
		case <-w.free:
			free++
		case <-ctx.Done():
		}
	}
}

// next reserves up to limit jobs from the queues in priority order,
// first taking over jobs whose worker presumably died (as many as there
// is room for).
//
// It searches each queue from a little behind where its last search
// there ended (see driver.Driver.Reserve), so that on PostgreSQL it walks
// no dead index entries of jobs done. A job stored with an earlier
// available_at than that, by a transaction that committed late or a
// process whose clock lags, would be left out: once a second the prober
// looks for such jobs, and for stale reservations, off the fetcher's path
// (those looks walk the dead entries), and the fetcher searches the queue
// in full, or takes over, only when it found some. The first search and
// the last before a StopWhenEmpty worker stops are full sweeps, made
// inline; swept reports whether this was one.
//
// A search never starts past now: after the clock moved back, jobs
// dispatched since are due before the cursor, and are found at once.
func (w *worker) next(ctx context.Context, limit int) (jobs []*driver.Job, swept bool, err error) {
	q := w.q
	now, at, pace := q.clock.Now().UnixMilli(), q.reservedAt(), q.pace()
	swept, w.sweepNow = w.sweepNow, false
	if swept {
		w.probedAt = pace
	} else if since := pace - w.probedAt; since < 0 || since >= max(sweepEveryMs, w.probeEveryMs.Load()) {
		w.probedAt = pace
		w.probe(now, at, pace)
	}
	if swept || w.stale.Load() {
		done := true
		for _, name := range w.opts.Queues {
			for len(jobs) < limit {
				j, err := q.store.TakeOver(ctx, name, at)
				if err != nil {
					return jobs, swept, err
				}
				if j == nil {
					break
				}
				jobs = append(jobs, j)
			}
			done = done && len(jobs) < limit
		}
		if done {
			w.stale.Store(false)
		}
	}
	for i, name := range w.opts.Queues {
		if len(jobs) == limit {
			break
		}
		var from int64
		if last, ok := w.cursor[name]; ok && !swept && !w.behind[i].Swap(false) {
			from = min(last, now) - cursorSlackMs
		}
		want := limit - len(jobs)
		got, err := q.store.Reserve(ctx, driver.Reservation{Queue: name, Now: now, At: at, From: from, Limit: want})
		if err == nil && len(got) < want {
			// It found no more: every job due by now is taken, so the next
			// search need not walk the rows of those it reserved (nor, on
			// PostgreSQL, their dead index entries).
			w.cursor[name] = max(w.cursor[name], now)
		}
		for _, j := range got {
			w.cursor[name] = max(w.cursor[name], j.AvailableAt)
		}
		if jobs == nil {
			jobs = got // most often the only batch: no copy
		} else {
			jobs = append(jobs, got...)
		}
		if err != nil {
			return jobs, swept, err
		}
	}
	return jobs, swept, nil
}

// probeShare is the prober's time between two looks, as a multiple of
// how long the last one took.
const probeShare = 20

// probe is a request to the prober: at now, look behind each queue's
// cursor (from, by queue; 0 where there is none to look behind) and, if
// stale, for reservations stale at at (on the clock of reservations).
type probe struct {
	now, at int64
	from    []int64
	stale   bool
}

// probe asks the prober to look, unless it is still looking.
func (w *worker) probe(now, at, pace int64) {
	p := probe{now: now, at: at, from: make([]int64, len(w.opts.Queues))}
	for i, name := range w.opts.Queues {
		if last, ok := w.cursor[name]; ok {
			p.from[i] = min(last, now) - cursorSlackMs
		}
	}
	// Stale reservations are looked for once a second in a process, by
	// whichever of its workers comes first.
	last := w.q.lastSweep.Load()
	since := pace - last
	p.stale = (since < 0 || since >= sweepEveryMs) && w.q.lastSweep.CompareAndSwap(last, pace)
	select {
	case w.probes <- p:
	default:
	}
}

// startProber runs the prober until stop: it looks, reading only, for
// what the fetcher's next searches would miss, and tells the fetcher. A
// look that fails counts as found: the fetcher's own search then reports
// the error, and loses nothing.
//
// A look walks what a vacuum has not yet cleared (on PostgreSQL, the
// dead index entries of every job done since), which can take a while:
// the prober spends at most a twentieth of the time looking, and looks
// less often than once a second when it must.
func (w *worker) startProber() (stop func()) {
	ctx, cancel := context.WithCancel(w.jobCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var p probe
			select {
			case <-ctx.Done():
				return
			case p = <-w.probes:
			}
			start := time.Now()
			found := false
			for i, name := range w.opts.Queues {
				if p.from[i] > 0 {
					if behind, err := w.q.store.Behind(ctx, name, p.now, p.from[i]); behind || err != nil {
						w.behind[i].Store(true)
						found = true
					}
				}
				if p.stale {
					if stale, err := w.q.store.Stale(ctx, name, p.at); stale || err != nil {
						w.stale.Store(true)
						found = true
					}
				}
			}
			w.probeEveryMs.Store(probeShare * time.Since(start).Milliseconds())
			if found {
				select {
				case w.probed <- struct{}{}:
				default:
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// cursorSlackMs is how far behind its cursor a worker's search of a
// queue starts: room for the clocks of dispatching processes
// and for transactions that commit a little after they stored a job.
const cursorSlackMs = 1000

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

// completer stores successes in batches: up to maxBatch at a time, none
// waiting longer than flushEvery. A crash of the worker loses at most the
// batch being gathered, and one of the database server the batches whose
// commits were not yet on disk (see Driver.Complete): those jobs run again
// after their takeover (at least once).
type completer struct {
	w       *worker
	in      chan success
	done    chan struct{}
	flushed bool // it stored a completion: sync at the end
}

// success is a job whose handler succeeded, and how long it ran.
type success struct {
	job *driver.Job
	ms  int64
}

const (
	maxBatch   = 100
	flushEvery = 2 * time.Millisecond
)

func newCompleter(w *worker) *completer {
	c := &completer{w: w, in: make(chan success, maxBatch), done: make(chan struct{})}
	go c.loop()
	return c
}

func (c *completer) close() {
	close(c.in)
	<-c.done
}

func (c *completer) loop() {
	defer close(c.done)
	batch := make([]success, 0, maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case s, ok := <-c.in:
			if !ok {
				c.flush(batch)
				c.sync()
				return
			}
			batch = append(batch, s)
			if len(batch) == 1 {
				timer.Reset(flushEvery)
			}
			if len(batch) == maxBatch {
				timer.Stop()
				c.flush(batch)
				batch = batch[:0]
			}
		case <-timer.C:
			c.flush(batch)
			batch = batch[:0]
		}
	}
}

// flush deletes a batch of successful jobs, fenced by their attempts, and
// logs each. A failing database is tried three times; after that the jobs
// stay reserved and run again once taken over.
func (c *completer) flush(batch []success) {
	if len(batch) == 0 {
		return
	}
	done := make([]driver.Attempt, len(batch))
	for i, s := range batch {
		done[i] = driver.Attempt{ID: s.job.ID, Attempt: s.job.Attempts}
	}
	var deleted []string
	c.flushed = true
	err := retried(func() (err error) {
		deleted, err = c.w.q.store.Complete(c.w.jobCtx, done)
		return err
	})
	var stored map[string]bool // nil when every job was deleted, as is usual
	if len(deleted) != len(batch) {
		stored = make(map[string]bool, len(deleted))
		for _, id := range deleted {
			stored[id] = true
		}
	}
	var buf [8]slog.Attr // slog copies the attributes: one buffer serves every line
	for _, s := range batch {
		kept := stored == nil || stored[s.job.ID]
		c.w.count(&c.w.succeeded, kept, err)
		attrs := append(attemptAttrs(buf[:0], s.job, s.ms), slog.String("outcome", "succeeded"))
		level, attrs := recorded(slog.LevelInfo, attrs, kept, err)
		if level > slog.LevelInfo || !c.w.opts.quiet {
			c.w.logAttempt(level, attrs)
		}
	}
}

// sync makes the completions durable when the worker stops: they commit
// without waiting for the disk (see Driver.Complete).
func (c *completer) sync() {
	if !c.flushed {
		return
	}
	if err := retried(func() error { return c.w.q.store.Sync(c.w.jobCtx) }); err != nil {
		c.w.log.Warn("queue: the last completions may not be on disk yet; if the database crashes now, their jobs run again", "error", err)
	}
}

// retried calls f up to three times, 50 then 100 ms apart, until it
// succeeds, and returns its last error: a completion outlives a broken
// connection or a restarting database server.
func retried(f func() error) error {
	var err error
	for try := range 3 {
		if err = f(); err == nil || try == 2 {
			break
		}
		time.Sleep(time.Duration(try+1) * 50 * time.Millisecond)
	}
	return err
}

// logAttempt writes an attempt's log line. It hands the record to the
// handler itself: the line has no use for its caller's source position,
// which slog would look up for every line (a tenth of its cost).
func (w *worker) logAttempt(level slog.Level, attrs []slog.Attr) {
	h := w.log.Handler()
	if !h.Enabled(w.jobCtx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, "job attempt", 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(w.jobCtx, r) // as slog.Logger does: a handler reports its own errors
}

// attemptAttrs appends the attributes every attempt's log line has.
func attemptAttrs(attrs []slog.Attr, job *driver.Job, ms int64) []slog.Attr {
	return append(attrs, slog.String("name", job.Name), slog.String("job_id", job.ID), slog.String("queue", job.Queue),
		slog.Int("attempt", job.Attempts), slog.Int64("duration_ms", ms))
}

// attemptError is a failed attempt: its message, and whether retrying can
// help.
type attemptError struct {
	msg       string
	permanent bool
	stack     string // for a panic
}

// slot is one handler goroutine of a worker. attempt holds the number of
// the attempt it runs, 0 while idle; whichever of the slot and the
// watchdog swaps that number for 0 first records the attempt's outcome.
type slot struct {
	attempt   atomic.Uint64
	abandonAt atomic.Int64 // Unix nanoseconds after which the watchdog gives the attempt up; 0 never
	job       *driver.Job  // set before attempt, read by the watchdog once it won the swap
	start     time.Time
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
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
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

// run runs one attempt of job in slot s and records its outcome, unless
// the watchdog abandoned it meanwhile: then it reports false.
func (w *worker) run(s *slot, job *driver.Job) bool {
	n := w.attempts.Add(1)
	s.job, s.start = job, time.Now()
	if job.TimeoutMs > 0 {
		s.abandonAt.Store(s.start.Add(time.Duration(job.TimeoutMs)*time.Millisecond + abandonAfter).UnixNano())
	} else {
		s.abandonAt.Store(0)
	}
	s.attempt.Store(n)
	failure := w.call(job)
	if !s.attempt.CompareAndSwap(n, 0) {
		return false
	}
	w.record(job, time.Since(s.start).Milliseconds(), failure)
	return true
}

// record stores and logs the outcome of an attempt that ran for ms
// milliseconds: successes go to the completer, failures are released for
// a retry or moved to the failed jobs.
func (w *worker) record(job *driver.Job, ms int64, failure *attemptError) {
	if failure == nil {
		w.done.in <- success{job: job, ms: ms} // counted once stored
		return
	}
	ctx := w.jobCtx
	now := w.q.clock.Now().UnixMilli()
	attrs := attemptAttrs(make([]slog.Attr, 0, 10), job, ms)
	var acted bool
	var err error
	var level slog.Level
	var count *atomic.Int64 // released or failed, if stored
	retry := !failure.permanent && job.Attempts < job.MaxAttempts
	if retry && job.BadBackoff != "" { // read only now: a job that succeeds needs none
		failure = &attemptError{msg: fmt.Sprintf("%s; and the stored job does not read: column backoff holds %q, not exponential:BASE_MS:MAX_MS or fixed:MS, so no retry can be scheduled",
			failure.msg, cut(job.BadBackoff, 40)), stack: failure.stack}
		retry = false
	}
	if retry {
		delay := job.Backoff.Delay(job.Attempts)
		err = retried(func() (err error) {
			acted, err = w.q.store.Release(ctx, job.ID, job.Attempts, now+ceilMs(delay), storable(failure.msg))
			return err
		})
		count = &w.released
		level, attrs = slog.LevelWarn, append(attrs, slog.String("outcome", "released"), slog.Float64("retry_in_secs", delay.Seconds()), slog.String("error", failure.msg))
	} else {
		err = retried(func() (err error) {
			acted, err = w.q.store.Fail(ctx, job.ID, job.Attempts, storable(failure.msg), now)
			return err
		})
		count = &w.failed
		level, attrs = slog.LevelError, append(attrs, slog.String("outcome", "failed"), slog.String("error", failure.msg))
	}
	if failure.stack != "" {
		attrs = append(attrs, slog.String("stack", failure.stack))
	}
	w.count(count, acted, err)
	level, attrs = recorded(level, attrs, acted, err)
	w.logAttempt(level, attrs)
}

// count counts an attempt whose outcome was stored as its outcome, and
// one whose outcome was not as lost.
func (w *worker) count(outcome *atomic.Int64, stored bool, err error) {
	if stored && err == nil {
		outcome.Add(1)
	} else {
		w.lost.Add(1)
	}
}

// recorded adds to an attempt's log line what storing its outcome did:
// an error, or a reservation another worker had taken over (this one was
// presumed dead, and the other attempt is the one that counts).
func recorded(level slog.Level, attrs []slog.Attr, stored bool, err error) (slog.Level, []slog.Attr) {
	switch {
	case err != nil:
		return slog.LevelError, append(attrs, slog.String("record_error", err.Error()))
	case !stored:
		return max(level, slog.LevelWarn), append(attrs, slog.Bool("reservation_lost", true))
	}
	return level, attrs
}

// call runs the job's handler, with a context that ends at the job's
// timeout, and turns an error, a panic or a timeout into a failure.
func (w *worker) call(job *driver.Job) (failure *attemptError) {
	if msg := unreadable(job); msg != "" {
		return &attemptError{msg: "the stored job does not read: " + msg, permanent: true}
	}
	if job.Attempts > job.MaxAttempts {
		// Taken over after its last attempt's worker died, or lost the
		// database, before it recorded an outcome: running it again would
		// go past its attempts, and a job that kills its worker would
		// never stop coming back.
		return &attemptError{msg: fmt.Sprintf("attempt %d of %[1]d ended without an outcome (its worker stopped, or lost the database, before recording one), and no attempt is left",
			job.MaxAttempts), permanent: true}
	}
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
	defer func() {
		if p := recover(); p != nil {
			failure = &attemptError{msg: fmt.Sprintf("panic: %v", p), stack: string(debug.Stack())}
		}
	}()
	err := reg.handle(ctx, job.Payload, JobContext{JobID: job.ID, Name: job.Name, Queue: job.Queue, Attempt: job.Attempts})
	if err == nil {
		return nil
	}
	var perr *PayloadError // declared here: errors.As moves it to the heap
	switch {
	case errors.As(err, &perr):
		return &attemptError{msg: err.Error(), permanent: true}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &attemptError{msg: fmt.Sprintf("timed out after %s: %v", time.Duration(job.TimeoutMs)*time.Millisecond, err)}
	}
	return &attemptError{msg: err.Error()}
}

// unreadable says what of a job's stored row the worker cannot run it
// with, or "".
func unreadable(job *driver.Job) string {
	switch {
	case job.Corrupt != "":
		return job.Corrupt
	case job.MaxAttempts < 1:
		return fmt.Sprintf("column max_attempts holds %d, not 1 or more", job.MaxAttempts)
	case job.TimeoutMs < 0:
		return fmt.Sprintf("column timeout_ms holds %d, not 0 (no limit) or more", job.TimeoutMs)
	}
	return ""
}

// cut shortens s to at most n bytes, on a character boundary, ending in
// "…" when it cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// storable makes a text from outside (a handler's error, a panic's
// value) storable in every database: invalid UTF-8 and NUL bytes, which
// PostgreSQL refuses in text columns, become U+FFFD, and a text over
// MaxErrorLen bytes is cut on a character boundary and ends in "…".
func storable(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return cut(s, MaxErrorLen)
}
