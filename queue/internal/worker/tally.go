package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// tallyEvery is how often a worker adds what it finished to the counts of
// every process (Store.AddThroughput).
const tallyEvery = 5 * time.Second

// tally is what a worker finished on one queue since it last added it:
// its outcomes, and by job type how long its attempts waited and ran.
type tally struct {
	succeeded, released, failed atomic.Int64
	types                       sync.Map // job type -> *timings
}

// timings count a job type's attempts by bucket (driver.Bucket) of their
// run time ([0]) and queue wait ([1]).
type timings [2][driver.Buckets]atomic.Int64

// timed counts an attempt of job that had been due waitMs when it
// started and ran for run.
func (w *worker) timed(job *driver.Job, waitMs int64, run time.Duration) {
	t := w.tallies[job.Queue]
	if t == nil {
		return
	}
	v, ok := t.types.Load(job.Name)
	if !ok {
		v, _ = t.types.LoadOrStore(job.Name, new(timings))
	}
	c := v.(*timings)
	c[0][driver.Bucket(run.Microseconds())].Add(1)
	c[1][driver.Bucket(waitMs*1000)].Add(1)
}

// newTallies makes the tally of each queue; read-only after, so counting
// takes no lock.
func newTallies(queues []string) map[string]*tally {
	t := make(map[string]*tally, len(queues))
	for _, q := range queues {
		t[q] = &tally{}
	}
	return t
}

// tallied counts one outcome (one of the worker's counters) on queue.
func (w *worker) tallied(queue string, outcome *atomic.Int64) {
	t := w.tallies[queue]
	switch {
	case t == nil:
	case outcome == &w.succeeded:
		t.succeeded.Add(1)
	case outcome == &w.released:
		t.released.Add(1)
	case outcome == &w.failed:
		t.failed.Add(1)
	}
}

// startTallies adds the tallies to the store every tallyEvery, and once
// more when stopped: the dashboard's throughput, across processes. It
// prunes the history as it starts and then with the tallies.
func (w *worker) startTallies() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		w.prune(done) // as the worker starts, then once a minute
		tick := time.NewTicker(tallyEvery)
		defer tick.Stop()
		failed := false
		for {
			var last bool
			select {
			case <-tick.C:
			case <-done:
				last = true
			}
			failed = w.addTallies(failed)
			if last {
				return
			}
			w.prune(done)
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// addTallies adds and clears the tallies; it logs a failure once until
// one succeeds (before migrate the table is missing), and reports whether
// this one failed. What a failed write held is lost: it is a measure, not
// a record.
func (w *worker) addTallies(failedBefore bool) bool {
	minute := w.cfg.Clock.Now().UnixMilli() / 60_000 * 60_000
	var counts []driver.Throughput
	var timed []driver.Timing
	for queue, t := range w.tallies {
		c := driver.Throughput{Queue: queue, Minute: minute, Succeeded: t.succeeded.Swap(0), Released: t.released.Swap(0), Failed: t.failed.Swap(0)}
		if c.Succeeded+c.Released+c.Failed > 0 {
			counts = append(counts, c)
		}
		t.types.Range(func(name, v any) bool {
			c := v.(*timings)
			for kind := range c {
				for b := range c[kind] {
					if n := c[kind][b].Swap(0); n > 0 {
						timed = append(timed, driver.Timing{Queue: queue, Name: name.(string), Minute: minute, Wait: kind == 1, Bucket: b, Count: n})
					}
				}
			}
			return true
		})
	}
	if len(counts) == 0 && len(timed) == 0 {
		return failedBefore
	}
	ctx, cancel := context.WithTimeout(w.jobCtx, 10*time.Second)
	defer cancel()
	if err := w.cfg.Store.AddThroughput(ctx, counts, timed, minute-24*time.Hour.Milliseconds()); err != nil {
		if !failedBefore {
			w.log.Warn("add the attempts finished to the queue's throughput; counting on", "error", err)
		}
		return true
	}
	return false
}

// pruneEveryMs is how often, on Clock.Pace, a process prunes the history;
// pruneBatch how many jobs a transaction deletes.
const (
	pruneEveryMs = 60_000
	pruneBatch   = 1000
)

// prune runs the features' upkeeps (driver.Upkeeps) and deletes the jobs
// kept in the history longer than KeepSucceeded, pruneBatch to a
// transaction until none is left or stop is closed, once every
// pruneEveryMs per process, by whichever of its workers comes first.
func (w *worker) prune(stop <-chan struct{}) {
	if w.cfg.Prunes == nil {
		return
	}
	pace, last := w.cfg.Clock.Pace(), w.cfg.Prunes.Load()
	if last != 0 && pace >= last && pace-last < pruneEveryMs || !w.cfg.Prunes.CompareAndSwap(last, max(pace, 1)) {
		return
	}
	for _, u := range driver.Upkeeps {
		n, err := w.cfg.Store.Upkeep(w.jobCtx, u, w.cfg.Clock.Now().UnixMilli(), w.cfg.Clock.ReservedAt())
		if err != nil {
			w.log.Warn(u.String()+"; the next minute tries again", "error", err)
		} else if line, counts := u.Mended(); n > 0 && line != "" {
			w.log.Warn(line, counts, n)
		}
	}
	if w.cfg.KeepSucceeded <= 0 {
		return
	}
	before := w.cfg.Clock.Now().Add(-w.cfg.KeepSucceeded).UnixMilli()
	for {
		n, err := w.cfg.Store.PruneSucceeded(w.jobCtx, before, pruneBatch)
		if err != nil {
			w.log.Warn("prune the succeeded jobs kept longer than queue.keep_succeeded; the next minute tries again", "error", err)
			return
		}
		select {
		case <-stop:
			return
		default:
		}
		if n < pruneBatch {
			return
		}
	}
}
