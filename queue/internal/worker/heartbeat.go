package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// ErrReservationLost is the cause of the context of an attempt whose job
// another worker took over while it ran: this worker's heartbeat had
// stopped for its rescue time (its process paused, or cut off from the
// database), so it was presumed gone. Its outcome will not be kept.
var ErrReservationLost = errors.New("the job was taken over by another worker: this worker's heartbeat had stopped, so it was presumed gone")

// Heartbeats keep a registration in the store's registry: the first beat
// registers it, one every Every keeps it alive, and stopping deletes it.
type Heartbeats struct {
	Store  driver.Core
	Worker driver.Worker // its ID set
	Every  time.Duration
	// ReservedAt is the time of a beat, on the clock of reservations (0
	// for the driver's own).
	ReservedAt func() int64
	Log        *slog.Logger
	// Running, when set, lists the attempts running at a beat; Lost is
	// given those of them that are no longer their job's reservation.
	Running func() []driver.Attempt
	Lost    func([]driver.Attempt)
	// Beat, when set, is called after each beat with its error.
	Beat func(err error)
	// Restart, when set, is called once, after the first beat that finds
	// a restart requested of the worker (queue:restart).
	Restart func()
}

// Start beats once, registering the worker before it returns, then
// every Every in the background until stop, which deregisters it unless
// told to leave its row (stop(false)): the row then shows the worker
// gone once its rescue time passes, and its running jobs are taken over.
// A failed beat is logged once until one succeeds (before migrate the
// table is missing); the work goes on.
func (h Heartbeats) Start(ctx context.Context) (stop func(deregister bool)) {
	w := h.Worker
	failing, restart := false, h.Restart
	beat := func() {
		var running []driver.Attempt
		if h.Running != nil {
			running = h.Running()
		}
		w.Running = len(running)
		bctx, cancel := context.WithTimeout(ctx, max(h.Every, 5*time.Second)) // a new connection may take longer than a test's period
		b, err := h.Store.Heartbeat(bctx, w, h.ReservedAt(), running)
		cancel()
		if h.Beat != nil {
			h.Beat(err)
		}
		switch {
		case err != nil && !failing:
			h.Log.Warn("register the worker; it works on, and tries again at its next heartbeat", "worker_id", w.ID, "error", err)
			failing = true
		case err == nil && failing:
			h.Log.Info("registered the worker", "worker_id", w.ID)
			failing = false
		}
		if len(b.Lost) > 0 && h.Lost != nil {
			h.Lost(b.Lost)
		}
		if b.Restart && restart != nil {
			h.Log.Info("restart requested (queue:restart): stopping once the running jobs end", "worker_id", w.ID)
			restart()
			restart = nil
		}
	}
	beat()
	done, stopped := make(chan struct{}), make(chan struct{})
	var deregister bool
	go func() {
		defer close(stopped)
		tick := time.NewTicker(h.Every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				beat()
			case <-done:
				if !deregister {
					return
				}
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := h.Store.Deregister(ctx, w.ID); err != nil {
					h.Log.Warn("deregister the worker; its row shows it gone until it is forgotten, an hour after its last heartbeat", "worker_id", w.ID, "error", err)
				}
				cancel()
				return
			}
		}
	}()
	return func(d bool) {
		deregister = d
		close(done)
		<-stopped
	}
}

// lease is what a worker knows of its registration: when its last beat
// succeeded, on the monotonic clock, and for how long after one it
// reserves jobs as itself.
type lease struct {
	id     string
	valid  time.Duration
	beatAt atomic.Pointer[time.Time] // nil until the first beat succeeds
}

// newLease is the lease of a worker registered as id, beating every
// period, that the registry counts gone rescue after its last beat
// (0: two periods after). It holds while the registry has at least a
// period left to hear from the worker: two periods after a beat with the
// default period, a third of the rescue time; with a shorter period (a
// test's), until a period before the registry would count it gone, not
// two short periods, which a busy machine's scheduler can miss.
func newLease(id string, every, rescue time.Duration) *lease {
	return &lease{id: id, valid: max(rescue-every, 2*every)}
}

// holder is the id the worker reserves jobs as: its own while its lease
// holds, so that the registry shows it alive; "" otherwise, and its jobs
// are judged by their age, as those of a worker not registered, rather
// than taken over while they run because the registry has not heard from
// it.
func (l *lease) holder() string {
	if l == nil {
		return ""
	}
	at := l.beatAt.Load()
	if at == nil || time.Since(*at) >= l.valid {
		return ""
	}
	return l.id
}

// startHeartbeats registers the worker in the store's registry, before
// it takes a job, and beats its heart every HeartbeatEvery until
// stopped, then deregisters it (unless told not to). At each beat it
// cancels, with the cause ErrReservationLost, the attempts whose jobs
// were taken over meanwhile; at the first that finds a restart requested
// it stops the worker, with the cause ErrRestart.
func (w *worker) startHeartbeats() (stop func(deregister bool)) {
	reg := w.cfg.Registration
	if reg.ID == "" {
		return func(bool) {}
	}
	reg.Kind, reg.Queues, reg.Concurrency = driver.KindWorker, w.opts.Queues, w.opts.Workers
	every := w.cfg.HeartbeatEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	w.lease = newLease(reg.ID, every, time.Duration(reg.RescueMs)*time.Millisecond)
	return Heartbeats{
		Store: w.cfg.Store, Worker: reg, Every: every, ReservedAt: w.cfg.Clock.ReservedAt, Log: w.log,
		Running: w.runningAttempts,
		Lost:    w.reservationsLost,
		Restart: func() {
			w.stop(ErrRestart)
			if w.opts.Restarting != nil {
				w.opts.Restarting()
			}
		},
		Beat: func(err error) {
			if err == nil {
				now := time.Now()
				w.lease.beatAt.Store(&now)
			}
			if w.opts.Beat != nil {
				w.opts.Beat(err)
			}
		},
	}.Start(w.jobCtx)
}

// runningAttempts lists the attempts the worker's handlers run.
func (w *worker) runningAttempts() []driver.Attempt {
	var out []driver.Attempt
	for _, s := range w.slotList() {
		if j := s.running(); j != nil {
			out = append(out, driver.Attempt{ID: j.ID, Attempt: j.Attempts})
		}
	}
	return out
}

// reservationsLost cancels the attempts whose jobs another worker took
// over.
func (w *worker) reservationsLost(lost []driver.Attempt) {
	for _, a := range lost {
		for _, s := range w.slotList() {
			if j, ok := s.cancelIf(a.ID, a.Attempt, ErrReservationLost); ok {
				w.log.Warn("job taken over by another worker while this one ran it (its heartbeat had stopped, so it was presumed gone): its attempt is cancelled, and its outcome will not be kept",
					"name", j.Name, "job_id", j.ID, "queue", j.Queue, "attempt", j.Attempts)
			}
		}
	}
}
