package worker

import (
	"errors"
	"time"
)

// ErrCancelled is the cause of the context of an attempt cancelled by a
// cancel request (queue.Cancel): context.Cause(ctx) returns it.
var ErrCancelled = errors.New("job cancelled")

// cancelChecks is when the watchdog last read the cancel requests, and
// what it knew then of this process's.
type cancelChecks struct {
	at   time.Time
	seen int64 // Config.Cancels
}

// checkCancels reads, once a second while attempts run, at once when
// told (a NOTIFY of another process, a cancel of this one), which of the
// jobs running have a request to cancel them, and cancels each one's
// context with ErrCancelled. A handler that heeds it returns; its job then
// fails as cancelled, and is not retried.
func (w *worker) checkCancels(c *cancelChecks) {
	told := w.cancelNote.Swap(false)
	if w.cfg.Cancels != nil {
		if n := w.cfg.Cancels.Load(); n != c.seen {
			c.seen, told = n, true
		}
	}
	if !told && time.Since(c.at) < time.Second {
		return
	}
	var ids []string
	for _, s := range w.slots {
		if j := s.running(); j != nil {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	c.at = time.Now()
	cancel, err := w.cfg.Store.CancelRequested(w.jobCtx, ids)
	if err != nil {
		w.log.WarnContext(w.jobCtx, "read the requests to cancel running jobs", "error", err)
		return
	}
	for _, id := range cancel {
		for _, s := range w.slots {
			if j, ok := s.cancelIf(id, 0, ErrCancelled); ok {
				w.log.InfoContext(w.jobCtx, "cancelling a running job", "name", j.Name, "job_id", id, "queue", j.Queue)
			}
		}
	}
}
