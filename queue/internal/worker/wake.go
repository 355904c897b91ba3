package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// Waker wakes the idle fetchers of a process at each dispatch: Wait
// returns a channel that the next Wake closes.
type Waker struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewWaker returns a Waker.
func NewWaker() *Waker { return &Waker{ch: make(chan struct{})} }

// Wait returns a channel that closes at the next Wake.
func (k *Waker) Wait() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ch
}

// Wake wakes every fetcher waiting.
func (k *Waker) Wake() {
	k.mu.Lock()
	defer k.mu.Unlock()
	close(k.ch)
	k.ch = make(chan struct{})
}

// listener is a driver that hears of dispatches in other processes.
type listener interface {
	Listen(ctx context.Context, wake func(queue string), connected func(), failed func(error))
}

// listen wakes the fetcher when another process dispatches a job on one
// of queues, for as long as the worker runs; polling stays the fallback.
func (w *worker) listen(queues []string) (stop func()) {
	l, ok := w.cfg.Store.(listener)
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
				switch {
				case queue == driver.AllQueues: // a pause or a resume
					w.pauseNote.Store(true)
					w.cfg.Waker.Wake()
				case strings.HasPrefix(queue, driver.CancelNote): // a cancel
					w.cancelNote.Store(true)
				case queue == driver.ResultNote: // for Await
					w.cfg.Waker.Wake()
				case slices.Contains(queues, queue):
					w.cfg.Waker.Wake()
				}
			},
			func() {
				w.listening.Store(true)
				if w.cfg.OnListen != nil {
					w.cfg.OnListen()
				}
			},
			func(err error) {
				switch {
				case errors.Is(err, db.ErrNoSession):
					w.log.Info("workers poll for the dispatches of other processes every queue.poll_interval_ms: " +
						"database.pooler is transaction and database.listen_url is empty")
				case errors.Is(err, driver.ErrNotNotified):
					w.log.Warn("listen for dispatches: " + err.Error())
				default:
					w.log.Warn("listen for dispatches; polling until it reconnects", "error", err)
				}
			})
	}()
	return func() {
		cancel()
		<-done
	}
}
