package queue

import (
	"context"
	"fmt"
	"time"
)

// pruneBatch is how many failed jobs [Inspector.PruneFailed] deletes in one
// transaction.
const pruneBatch = 1000

// PruneFailed deletes the failed jobs that failed more than olderThan
// ago, pruneBatch to a transaction, oldest first, so that a million
// never hold one long transaction (nor, on SQLite, the write lock); and
// returns how many it deleted. Then it deletes, as it does them, the
// chains, batches and workflows that ended as long ago, with their steps
// and results, and the results of jobs of no flow kept as long (not
// counted). progress, when not nil, is called with that
// count after each batch. Stopped by ctx or an error, it returns the count
// so far with the error: the batches before it are deleted. olderThan
// must be positive.
//
// To prune on a schedule, dispatch a [PruneFailedJob] from an entry:
//
//	schedule.Cron("queue.prune_failed", "0 3 * * *", queue.PruneFailedJob{OlderThanHours: 168})
func (i *Inspector) PruneFailed(ctx context.Context, olderThan time.Duration, progress func(deleted int)) (int, error) {
	q := i.q
	if olderThan <= 0 {
		return 0, fmt.Errorf("queue: prune failed jobs: the age is %s; want more than 0, such as 168h", olderThan)
	}
	before := q.clock.Now().Add(-olderThan).UnixMilli()
	deleted := 0
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("queue: prune failed jobs: stopped after %d: %w", deleted, err)
		}
		n, err := q.store.PruneFailed(ctx, before, pruneBatch)
		if err != nil {
			return deleted, fmt.Errorf("queue: prune failed jobs: after %d: %w", deleted, err)
		}
		deleted += n
		if n > 0 && progress != nil {
			progress(deleted)
		}
		if n < pruneBatch {
			break
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("queue: prune the flows that ended: %w", err)
		}
		n, err := q.store.PruneFlows(ctx, before, pruneBatch)
		if err != nil {
			return deleted, fmt.Errorf("queue: prune the flows that ended: %w", err)
		}
		if n < pruneBatch {
			return deleted, nil
		}
	}
}

// PruneFailedJob is the job queue.prune_failed, which every app with the
// queue module registers: it deletes the failed jobs older than
// OlderThanHours with [Inspector.PruneFailed]. Dispatch it from a schedule
// entry, such as every night.
type PruneFailedJob struct {
	OlderThanHours int `json:"older_than_hours"`
}

// JobName is the job's stable name.
func (PruneFailedJob) JobName() string { return "queue.prune_failed" }

// handlePrune runs a PruneFailedJob; an age that is not positive fails it
// at once.
func (q *Queue) handlePrune(ctx context.Context, j PruneFailedJob, _ JobContext) error {
	n, err := q.Inspector().PruneFailed(ctx, time.Duration(j.OlderThanHours)*time.Hour, nil)
	if err != nil && j.OlderThanHours <= 0 {
		return Permanent(err)
	}
	if err == nil {
		q.logger.InfoContext(ctx, "pruned the failed jobs", "deleted", n, "older_than_hours", j.OlderThanHours)
	}
	return err
}
