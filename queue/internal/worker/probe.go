package worker

import (
	"context"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// sweepEveryMs is how often, by the queue's clock, a worker looks for
// reservations gone stale and for jobs behind its cursors, even while it
// has work.
const sweepEveryMs = 1000

// probeShare is the prober's time between two looks, as a multiple of
// how long the last one took.
const probeShare = 20

// probe is a request to the prober: at now, look behind each queue's
// cursors (from and placeFrom, by queue; 0 where there is none to look
// behind) and, if stale, for reservations stale at at (on the clock of
// reservations).
type probe struct {
	full      bool // the looks behind the cursors and the features too; else only for stale reservations
	now, at   int64
	from      []int64
	placeFrom []int64
	stale     bool
	paused    []bool // by queue: no look for stale reservations
}

// probe asks the prober to look, unless it is still looking: in full,
// or only for stale reservations (when it is this process's turn).
func (w *worker) probe(now, at, pace int64, full bool) {
	// Stale reservations are looked for once a second in a process, by
	// whichever of its workers comes first.
	last := w.cfg.Sweeps.Load()
	since := pace - last
	stale := (since < 0 || since >= sweepEveryMs) && w.cfg.Sweeps.CompareAndSwap(last, pace)
	if !full && !stale {
		return
	}
	p := probe{full: full, now: now, at: at, stale: stale, from: make([]int64, len(w.opts.Queues)), placeFrom: make([]int64, len(w.opts.Queues))}
	p.paused = make([]bool, len(w.opts.Queues))
	for i, name := range w.opts.Queues {
		if last, ok := w.cursor[name]; ok && !w.paused(name) {
			p.from[i] = min(last, now) - cursorSlackMs
		}
		if !w.paused(name) {
			p.placeFrom[i] = w.places[name]
		}
		p.paused[i] = w.paused(name)
	}
	select {
	case w.probes <- p:
	default:
	}
}

// startProber runs the prober until stop: it looks, reading only, for
// what the fetcher's next searches would miss, reads the features of the
// queues (forgetting those no job needs any more: the one write), and
// tells the fetcher. A look that fails counts as found: the fetcher's
// own search then reports the error, and loses nothing.
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
			for i, name := range w.opts.Queues { // first, what a rescue waits for
				if p.stale && !p.paused[i] {
					if stale, err := w.cfg.Store.Stale(ctx, name, p.at); stale || err != nil {
						w.stale.Store(true)
						found = true
					}
				}
			}
			if found { // the fetcher takes the jobs over while the other looks go on
				select {
				case w.probed <- struct{}{}:
				default:
				}
			}
			if p.stale { // once a second a process, off the fetcher's path
				w.replan(ctx, p)
			}
			for i, name := range w.opts.Queues {
				if p.full && (p.from[i] > 0 || p.placeFrom[i] > 0) {
					if behind, err := w.cfg.Store.Behind(ctx, name, p.now, p.from[i], p.placeFrom[i], w.opts.Only); behind || err != nil {
						w.behind[i].Store(true)
						found = true
					}
				}
				if p.full && !p.paused[i] {
					found = w.readFeatures(ctx, i, name, true) || found
				}
			}
			if p.full {
				w.probeEveryMs.Store(probeShare * time.Since(start).Milliseconds())
			}
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

// replan runs driver.UpkeepPlans: the reservations' plans made again
// when jobs grew far past its statistics.
func (w *worker) replan(ctx context.Context, p probe) {
	n, err := w.cfg.Store.Upkeep(ctx, driver.UpkeepPlans, p.now, p.at)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn(driver.UpkeepPlans.String()+"; the next look tries again", "error", err)
	case n > 0:
		w.log.Info("analyzed jobs: it grew far past its statistics, and the plans the database kept while it looked small would walk it")
	}
}
