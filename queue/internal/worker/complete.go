package worker

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

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
	// barrier asks the loop to store the batch it gathers now, and
	// answers with admitted: how many batches so far may have let jobs in
	// (a limited job's lets the next of its key in; a flow's step, the
	// steps that waited for it).
	barrier  chan chan int
	admitted int
}

// success is a job whose handler succeeded, how long it ran, and how long
// it had been due when it started (kept with it where successes are).
type success struct {
	job  *driver.Job
	ms   int64
	wait int64
}

const (
	maxBatch   = 100
	flushEvery = 2 * time.Millisecond
)

func newCompleter(w *worker) *completer {
	c := &completer{w: w, in: make(chan success, maxBatch), done: make(chan struct{}), barrier: make(chan chan int)}
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
		case reply := <-c.barrier:
			timer.Stop()
			for more := true; more; { // what was sent before the barrier, if the select took it first
				select {
				case s, ok := <-c.in:
					if more = ok; ok {
						batch = append(batch, s)
					}
				default:
					more = false
				}
			}
			for len(batch) > 0 {
				n := min(len(batch), maxBatch)
				c.flush(batch[:n])
				batch = batch[:copy(batch, batch[n:])]
			}
			reply <- c.admitted
		}
	}
}

// stored waits until every success sent before it is stored, and
// returns how many batches stored so far may have let jobs in (see
// barrier): a StopWhenEmpty worker whose count moved searches again for
// them.
func (c *completer) stored() int {
	reply := make(chan int)
	c.barrier <- reply
	return <-reply
}

// flush deletes a batch of successful jobs, fenced by their attempts, and
// logs each. A failing database is tried three times; after that the jobs
// stay reserved and run again once taken over.
func (c *completer) flush(batch []success) {
	if len(batch) == 0 {
		return
	}
	keep := c.w.cfg.KeepSucceeded > 0
	var at int64
	if keep {
		at = c.w.cfg.Clock.Now().UnixMilli()
	}
	done := make([]driver.Attempt, len(batch))
	var composed []driver.Attempt // of flows, or with results: through Finish
	var limited bool              // a job of a limit, or of a flow: the jobs it let in may be this process's to run
	for i, s := range batch {
		done[i] = driver.Attempt{ID: s.job.ID, Attempt: s.job.Attempts, Limit: s.job.LimitKey}
		limited = limited || s.job.LimitKey != ""
		if keep {
			done[i].At, done[i].Ms, done[i].Wait = at, s.ms, s.wait
		}
		if s.job.Flow != "" || s.job.Result != nil {
			if at == 0 {
				at = c.w.cfg.Clock.Now().UnixMilli()
			}
			a := done[i]
			a.At, a.Flow, a.Result = at, s.job.Flow, string(s.job.Result)
			composed = append(composed, a)
		}
	}
	if composed != nil {
		done = slices.DeleteFunc(done, func(a driver.Attempt) bool {
			return slices.ContainsFunc(composed, func(b driver.Attempt) bool { return b.ID == a.ID })
		})
	}
	var deleted, finished []string
	var err, finishErr error
	c.flushed = true
	if len(done) > 0 {
		err = retried(func() (err error) {
			deleted, err = c.w.cfg.Store.Complete(c.w.jobCtx, done, keep)
			return err
		})
	}
	if len(composed) > 0 {
		finishErr = retried(func() (err error) {
			finished, err = c.w.cfg.Store.Finish(c.w.jobCtx, composed, keep)
			return err
		})
		deleted, err = append(deleted, finished...), cmp.Or(err, finishErr)
		limited = true
	}
	if limited {
		for _, s := range batch { // one fenced out rewinds for nothing: harmless
			if s.job.LimitKey != "" {
				c.w.limitedEnded(s.job)
			}
		}
		c.admitted++
		c.w.cfg.Waker.Wake()
	}
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
		c.w.count(s.job, &c.w.succeeded, Succeeded, s.ms, kept, err)
		attrs := append(attemptAttrs(buf[:0], s.job, s.ms), slog.String("outcome", "succeeded"))
		level, attrs := recorded(slog.LevelInfo, attrs, kept, err)
		if level > slog.LevelInfo || !c.w.opts.Quiet {
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
	if err := retried(func() error { return c.w.cfg.Store.Sync(c.w.jobCtx) }); err != nil {
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
