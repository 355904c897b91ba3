package worker

import (
	"context"

	"github.com/navree/navree/queue/internal/driver"
)

// pauses is what the fetcher knows of the paused queues: it takes no job
// of a paused queue, searches none and takes over none. It reads them
// (Store.Paused) when it starts, when told of a change (Config.Pauses,
// bumped by this process; on PostgreSQL, the NOTIFY of another's), each
// time its poll comes round, and at most a second apart while it works:
// on SQLite another process's pause holds by the next poll.
type pauses struct {
	queues map[string]bool // driver.AllQueues for every queue
	readAt int64           // on Clock.Pace, when last read
	seen   int64           // the Config.Pauses it last read after
	failed bool            // the last read failed (logged once)
}

// paused reports whether the fetcher takes no jobs of queue.
func (w *worker) paused(queue string) bool {
	return w.pause.queues[queue] || w.pause.queues[driver.AllQueues]
}

// readPausesIfDue reads the paused queues if they may have changed since
// the last read: told so, or polled, or a second on.
func (w *worker) readPausesIfDue(ctx context.Context, polled bool) {
	changed := w.cfg.Pauses != nil && w.cfg.Pauses.Load() != w.pause.seen
	noted := w.pauseNote.Swap(false)
	since := w.cfg.Clock.Pace() - w.pause.readAt
	if w.pause.queues != nil && !changed && !noted && !polled && since >= 0 && since < sweepEveryMs {
		return
	}
	w.readPauses(ctx)
}

// readPauses reads the paused queues, and logs each change of those the
// worker takes jobs from (at the first read, those paused). A failed read
// keeps what it knew.
func (w *worker) readPauses(ctx context.Context) {
	if w.cfg.Pauses != nil {
		w.pause.seen = w.cfg.Pauses.Load()
	}
	w.pause.readAt = w.cfg.Clock.Pace()
	list, err := w.cfg.Store.Paused(ctx)
	if err != nil {
		if !w.pause.failed {
			w.log.WarnContext(ctx, "read the paused queues; working as before until it succeeds", "error", err)
		}
		w.pause.failed = true
		if w.pause.queues == nil {
			w.pause.queues = map[string]bool{}
		}
		return
	}
	w.pause.failed = false
	now := make(map[string]bool, len(list))
	for _, queue := range list {
		now[queue] = true
	}
	// Each change, and at the first read what is paused.
	before := w.pause.queues
	if now[driver.AllQueues] != before[driver.AllQueues] {
		w.log.InfoContext(ctx, map[bool]string{true: "every queue paused", false: "every queue resumed"}[now[driver.AllQueues]])
	}
	for _, queue := range w.opts.Queues {
		if now[queue] != before[queue] {
			w.log.InfoContext(ctx, map[bool]string{true: "queue paused", false: "queue resumed"}[now[queue]], "queue", queue)
		}
	}
	w.pause.queues = now
}
