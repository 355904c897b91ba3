package worker

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

func (w *worker) unreserve(job *driver.Job) {
	if _, err := w.cfg.Store.Unreserve(w.jobCtx, job.ID, job.Attempts); err != nil {
		w.log.Error("give back a job reserved while stopping", "job_id", job.ID, "error", err)
	}
	w.putBack(job)
}

// fetch reserves jobs for the free handlers until ctx ends or a limit is
// reached: as many at once as handlers are free, from the first queue in
// priority order that has some.
func (w *worker) fetch(ctx context.Context) {
	free, claimed := w.opts.Workers, 0
	poll := time.NewTimer(0)
	defer poll.Stop()
	polled := true // the first search reads the paused queues
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
		wake := w.cfg.Waker.Wait() // before looking, so a dispatch right after is not missed
		w.readPausesIfDue(w.jobCtx, polled)
		polled = false
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
			// Successes are stored in batches, after their handlers come
			// free: those of limited jobs may have let held ones in, and
			// those of flows' steps the steps that waited for them.
			if n := w.done.stored(); n != w.admitted {
				w.admitted, w.sweepNow = n, true
				continue
			}
			// Nothing runs, so nothing can come back for a retry: empty.
			return
		}
		// The search found every job due by now (or failed): a handler
		// that comes free makes no job due, so the fetcher waits on for a
		// dispatch, the prober or the poll rather than search again (at
		// low load that search found nothing once per job), unless a
		// StopWhenEmpty worker may now have nothing left to run. A job
		// released to run again at once wakes the fetcher itself.
		drained := err == nil
		poll.Reset(w.untilReopen(w.cfg.PollInterval))
		for waiting := true; waiting; {
			if w.opts.Idle != nil && free == w.opts.Workers && w.listening.Load() {
				w.opts.Idle()
			}
			waiting = false
			select {
			case <-poll.C:
				polled = true
			case <-wake:
			case <-w.probed:
			case <-w.free:
				free++
				waiting = drained && !(w.opts.StopWhenEmpty && free == w.opts.Workers)
			case <-ctx.Done():
			}
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
// Each queue is searched by what the worker knows of the features of its
// jobs (see features): a queue where none has a priority by due time
// alone, the search that costs least; one where jobs with a priority may
// wait by priority first (see driver.Reservation). A queue where jobs
// with a rate limit may wait, or with a limit of its own, is searched
// from its first job, leaving out the keys whose window is full (see
// driver.Reservation.Features): the jobs over a limit wait behind those that
// started. The fetcher then waits no longer than until the first full
// window reopens (untilReopen).
//
// A queue where jobs with a fairness key may wait is searched taking its
// groups in turns (see driver.Reservation.Fair): the jobs without a key
// from the cursor, those with one by place from a cursor of places, the
// highest place it reserved (every due job of a lower place was taken
// then: the search takes the lowest first). A job with a lower place
// that waits (due since, released, or stored by a transaction that
// committed late) is found by the prober, as those behind the cursor are.
//
// What the worker knows of the features is never what a reservation
// depends on: the transaction that stores a job with a feature records
// it, and a search that does not do a recorded feature takes nothing.
// The fetcher then reads the features and searches again (reserveFrom),
// at once, whoever dispatched the job and however the worker was woken.
//
// A search never starts past now: after the clock moved back, jobs
// dispatched since are due before the cursor, and are found at once.
func (w *worker) next(ctx context.Context, limit int) (jobs []*driver.Job, swept bool, err error) {
	now, at, pace, by := w.cfg.Clock.Now().UnixMilli(), w.cfg.Clock.ReservedAt(), w.cfg.Clock.Pace(), w.lease.holder()
	swept, w.sweepNow = w.sweepNow, false
	if swept {
		w.probedAt = pace
	} else if since := pace - w.probedAt; since < 0 || since >= max(sweepEveryMs, w.probeEveryMs.Load()) {
		w.probedAt = pace
		w.probe(now, at, pace, true)
	} else if since >= sweepEveryMs {
		// The looks behind the cursors wait for their share of the time;
		// the look for stale reservations does not: a job of a dead worker
		// runs again within rescue_after and a second, however long the
		// other looks took (on a loaded machine, seconds).
		w.probe(now, at, pace, false)
	}
	if swept {
		for i, name := range w.opts.Queues {
			if !w.paused(name) {
				w.readFeatures(ctx, i, name, false)
			}
		}
	}
	if swept || w.stale.Load() {
		done := true
		for _, name := range w.opts.Queues {
			for len(jobs) < limit && !w.paused(name) {
				j, err := w.cfg.Store.TakeOver(ctx, name, at, by)
				if err != nil {
					return jobs, swept, err
				}
				if j == nil {
					break
				}
				if o := w.opts.Only; o != nil && !o.Has(j.Name) {
					w.unreserve(j) // for a worker that knows its type
					continue
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
		if w.paused(name) {
			continue
		}
		if r := w.rewind[i].Swap(math.MaxInt64); r != math.MaxInt64 {
			w.cursor[name] = min(w.cursor[name], r)
		}
		if p := w.placeBack[i].Swap(math.MaxInt64); p != math.MaxInt64 {
			w.places[name] = min(w.places[name], p)
		}
		got, err := w.reserveFrom(ctx, i, name, limit-len(jobs), now, at, by, swept)
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

// reserveFrom reserves up to want jobs of the queue i, name, by the
// search of the features the worker knows of it. A search that takes
// none may have been kept from it by a feature it does not do: the
// fetcher reads them, and searches again if it learnt of one.
func (w *worker) reserveFrom(ctx context.Context, i int, name string, want int, now, at int64, by string, swept bool) ([]*driver.Job, error) {
	behind := w.behind[i].Swap(false)
	for {
		f := w.features.of(i)
		// A queue with rate limits is searched from its first job: the
		// jobs over a limit wait behind those that started.
		queueRate := w.cfg.QueueRates[name]
		rated := f&driver.FeatureRate != 0 || !queueRate.IsZero()
		var from, placeFrom int64
		if last, ok := w.cursor[name]; ok && !swept && !behind && !rated {
			from, placeFrom = min(last, now)-cursorSlackMs, w.places[name]
		}
		m := &w.marks[i]
		*m = driver.Marks{Rate: queueRate, Place: placeFrom}
		got, err := w.cfg.Store.Reserve(ctx, driver.Reservation{Queue: name, Only: w.opts.Only, Now: now, At: at, By: by, From: from, Limit: want,
			Features: f, Marks: m})
		if err == nil && len(got) == 0 && w.readFeatures(ctx, i, name, false) {
			continue
		}
		if err == nil && (len(got) < want || m.Drained) && !rated {
			// It found no more: every job due by now is taken, so the next
			// search need not walk the rows of those it reserved (nor, on
			// PostgreSQL, their dead index entries).
			w.cursor[name] = max(w.cursor[name], now)
		}
		for _, j := range got {
			switch {
			case j.FairKey == "" || f&driver.FeatureFair == 0:
				w.cursor[name] = max(w.cursor[name], j.AvailableAt)
			case !rated && j.Priority == 0: // a fair search takes keyed jobs by place
				w.places[name] = max(w.places[name], j.FairSeq)
			}
		}
		return got, err
	}
}

// untilReopen is how long the fetcher waits for a dispatch before it
// searches again: most, or less until the first full window of a rate
// limit that kept jobs waiting reopens.
func (w *worker) untilReopen(most time.Duration) time.Duration {
	for _, m := range w.marks {
		if m.ReopensIn > 0 {
			most = min(most, time.Duration(m.ReopensIn)*time.Millisecond)
		}
	}
	return most
}

// cursorSlackMs is how far behind its cursor a worker's search of a
// queue starts: room for the clocks of dispatching processes
// and for transactions that commit a little after they stored a job.
const cursorSlackMs = 1000
