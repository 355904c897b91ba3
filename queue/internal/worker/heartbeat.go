package worker

import (
	"context"
	"time"
)

// startHeartbeats registers the worker in the store's registry, before
// it takes a job, and beats its heart every HeartbeatEvery until
// stopped, then deregisters it. A
// failed beat is logged once until one succeeds (before migrate the table
// is missing); the worker works on.
func (w *worker) startHeartbeats() (stop func()) {
	if w.cfg.Registration.ID == "" {
		return func() {}
	}
	reg := w.cfg.Registration
	reg.Queues, reg.Concurrency = w.opts.Queues, w.opts.Workers
	every := w.cfg.HeartbeatEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	failing := false
	beat := func() {
		reg.Running = w.running()
		ctx, cancel := context.WithTimeout(w.jobCtx, every)
		err := w.cfg.Store.Heartbeat(ctx, reg, w.cfg.Clock.ReservedAt())
		cancel()
		if w.opts.Beat != nil {
			w.opts.Beat(err)
		}
		switch {
		case err != nil && !failing:
			w.log.Warn("register the worker; it works on, and tries again at its next heartbeat", "worker_id", reg.ID, "error", err)
			failing = true
		case err == nil && failing:
			w.log.Info("registered the worker", "worker_id", reg.ID)
			failing = false
		}
	}
	beat() // registered before it takes a job
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				beat()
			case <-done:
				ctx, cancel := context.WithTimeout(w.jobCtx, 10*time.Second)
				if err := w.cfg.Store.Deregister(ctx, reg.ID); err != nil {
					w.log.Warn("deregister the worker; its row shows it gone until it is forgotten, an hour after its last heartbeat", "worker_id", reg.ID, "error", err)
				}
				cancel()
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// running counts the attempts the worker's handlers run.
func (w *worker) running() int { return int(w.busy.Load()) }
