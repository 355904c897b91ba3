package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/limit"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// A job moves between jobs and the tables where it waits outside it
// (failed_jobs, queue_held, queue_steps) by statements built from one
// list of its columns (settings, heldColumns), and every move runs
// through one of two functions, where the features that need a move
// plug in: moveIn, for a job entering jobs from another table (a retry,
// a held job let in, a flow's step released), and moveOut, for a job
// leaving it (a completion, a failure, a cancel, a purge, a flow's
// cancel). No trigger lists a job's columns; on SQLite none does a
// feature's work (on PostgreSQL jobs_fair and jobs_features, on jobs,
// still give places and record features, for dispatches and moves
// alike).

// enteredColumns end a move of jobs into jobs from another table (moveIn):
// what it returns of each.
const enteredColumns = " RETURNING id, queue, coalesce(fair_key, ''), priority, coalesce(rate_key, ''), coalesce(limit_key, '')"

// sqlitePlaced writes the places of jobs moved in, a JSON array of [id,
// place].
const sqlitePlaced = "UPDATE jobs SET fair_seq = json_extract(w.value, '$[1]') FROM jsonb_each(?) AS w WHERE jobs.id = json_extract(w.value, '$[0]')"

// moveIn runs query in tx: a move of jobs into jobs from another table (a
// retry of failed jobs, a held job let in by its limit, a flow's step
// released), ending in enteredColumns. It then does for the jobs moved
// what a dispatch does for those it stores: on SQLite, each with a
// fairness key gets its place (placeAll) and the features of their
// queues are recorded (record); on PostgreSQL the triggers on jobs do
// both. It returns the jobs moved, with the columns it read. Every move
// into jobs passes here: what a feature needs of a job entering jobs is
// done here, once.
func (b *base) moveIn(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]*driver.Job, error) {
	rows, err := b.queryTx(ctx, tx, query, args...)
	var moved []*driver.Job
	err = sqlkit.EachRow(rows, err, func(r *sql.Rows) error {
		j := &driver.Job{}
		err := r.Scan(&j.ID, &j.Queue, &j.FairKey, &j.Priority, &j.RateKey, &j.LimitKey)
		moved = append(moved, j)
		return err
	})
	if err != nil || b.d.PG {
		return moved, err
	}
	if slices.ContainsFunc(moved, fair.Unplaced) {
		if err := b.placeAll(ctx, tx, moved); err != nil {
			return nil, err
		}
		var places [][2]any
		for _, j := range moved {
			if j.FairKey != "" {
				places = append(places, [2]any{j.ID, j.FairSeq})
			}
		}
		list, err := json.Marshal(places)
		if err != nil {
			return nil, err
		}
		if _, err := b.execTx(ctx, tx, sqlitePlaced, string(list)); err != nil {
			return nil, err
		}
	}
	return moved, b.record(ctx, tx, moved)
}

// queuesOf adds the queues of jobs to queues.
func queuesOf(jobs []*driver.Job, queues map[string]bool) {
	for _, j := range jobs {
		queues[j.Queue] = true
	}
}

// moveOut runs move in tx, a move of jobs out of jobs, with what a job
// leaving jobs needs around it: the concurrency keys of the limited ones
// locked before the move (PostgreSQL) and their next held jobs let in
// after (admit), due no earlier than the latest of them. which finds the
// jobs (limit.FreedOfIDs with a LIST of their ids as arg, or limit.FreedOfQueue with
// a queue); "" when the caller knows that none is limited, which costs
// nothing (byIDs).
func (b *base) moveOut(ctx context.Context, tx *sql.Tx, which string, arg any, move func() error) error {
	if which == "" {
		return move()
	}
	gone, err := freedBy(ctx, tx, b, which, arg)
	if err != nil {
		return err
	}
	if err := limit.Lock(ctx, tx, b.d, limit.FreedKeys(gone)); err != nil {
		return err
	}
	if err := move(); err != nil {
		return err
	}
	return admit(ctx, tx, b, gone)
}

// byIDs is moveOut's which and arg for the jobs ids, limited or not as
// far as the caller knows: "" when it knows that none is.
func byIDs(d sqlkit.Dialect, limited bool, ids ...string) (string, any) {
	if !limited || len(ids) == 0 {
		return "", nil
	}
	return d.Q(limit.FreedOfIDs), sqlkit.List(ids)
}
