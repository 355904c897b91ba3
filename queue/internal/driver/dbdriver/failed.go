package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Failed implements driver.Driver.
func (b *base) Failed(ctx context.Context, after driver.FailedKey, limit int, payloads bool) ([]driver.FailedJob, error) {
	query := b.q.failed
	if payloads {
		query = b.q.failedPayloads
	}
	after = fromFirst(after)
	rows, err := b.sqldb.QueryContext(ctx, query, after.FailedAt, after.ID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.FailedJob
	for rows.Next() {
		f, err := scanFailed(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// scanFailed reads a row of a failed job, leniently where a column does
// not convert (see readFailed).
func scanFailed(rows *sql.Rows) (driver.FailedJob, error) {
	var f driver.FailedJob
	var payload string
	var meta, limitKey, rateKey, fairKey, controls sql.NullString
	err := rows.Scan(&f.ID, &f.Queue, &f.Name, &payload, &f.MaxAttempts, &f.Backoff, &f.TimeoutMs,
		&f.Attempts, &f.Error, &f.CreatedAt, &f.FailedAt, &meta, &f.Priority, &limitKey, &rateKey, &fairKey, &f.Snoozes, &controls)
	if err != nil {
		return readFailed(rows, err)
	}
	var r reading
	c := r.settings(controls.String)
	if r.problem != "" {
		return readFailed(rows, errors.New(r.problem))
	}
	f.Payload, f.LimitKey, f.LimitMax = []byte(payload), limitKey.String, c.LimitMax
	f.RateKey, f.FairKey, f.Rate = rateKey.String, fairKey.String, c.Rate()
	if meta.Valid {
		f.Meta = []byte(meta.String)
	}
	return f, nil
}

// The statements of Lookup, in SQLite's words.
const (
	lookupJob    = "SELECT " + columns + " FROM jobs WHERE id = ?"
	lookupFailed = "SELECT id, queue, name, payload, " + failedRead + " FROM failed_jobs WHERE id = ?"
)

// fromFirst is the key to list failed jobs after: k, or for the zero key
// one before every failed job.
func fromFirst(k driver.FailedKey) driver.FailedKey {
	if k == (driver.FailedKey{}) {
		return driver.FailedKey{FailedAt: math.MinInt64, ID: firstID}
	}
	return k
}

// DeleteFailed implements driver.Driver.
func (s *sqliteDriver) DeleteFailed(ctx context.Context, id string) error {
	return s.deleteFailed(ctx, sqliteDeleteOne, id)
}

// DeleteFailed implements driver.Driver.
func (p *postgresDriver) DeleteFailed(ctx context.Context, id string) error {
	return p.deleteFailed(ctx, p.d.Words(sqliteDeleteOne), id)
}

func (b *base) deleteFailed(ctx context.Context, query, id string) error {
	res, err := b.sqldb.ExecContext(ctx, query, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, driver.ErrNoFailedJob)
	}
	return nil
}

// pruneFailed deletes a batch of the oldest failures, found in
// failed_jobs_failed_at.
const pruneFailed = "DELETE FROM failed_jobs WHERE id IN (SELECT id FROM failed_jobs WHERE failed_at < ? ORDER BY failed_at, id LIMIT ?)"

// PruneFailed implements driver.Driver.
func (s *sqliteDriver) PruneFailed(ctx context.Context, before int64, limit int) (int, error) {
	return s.count(ctx, pruneFailed, before, limit)
}

// PruneFailed implements driver.Driver, reaching the rows by primary key
// (see postgresStatements).
func (p *postgresDriver) PruneFailed(ctx context.Context, before int64, limit int) (int, error) {
	return p.count(ctx, p.d.Words("DELETE FROM failed_jobs WHERE id = ANY(ARRAY(SELECT id FROM failed_jobs WHERE failed_at < ? ORDER BY failed_at, id LIMIT ?))"), before, limit)
}

// FlushFailed implements driver.Driver.
func (b *base) FlushFailed(ctx context.Context) (int, error) {
	return b.count(ctx, b.q.flush)
}

// PendingCount implements driver.Driver.
func (b *base) PendingCount(ctx context.Context, queue string) (int, error) {
	var n int
	err := b.sqldb.QueryRowContext(ctx, b.q.pending, queue, queue).Scan(&n)
	return n, err
}

// failedBatch finds the keys of the failed jobs after one key, up to
// another, at most a number, in order: on PostgreSQL locked, and those
// another transaction holds left out.
const failedBatch = "SELECT failed_at, id FROM failed_jobs WHERE (failed_at, id) > (?, ?) AND (failed_at, id) <= (?, ?) ORDER BY failed_at, id LIMIT ?"

// RetryFailed implements driver.Driver: the keys of the batch first, then
// those jobs moved into jobs (moveIn) and out of failed_jobs, by their
// ids, in one transaction. Failed jobs of flows, or limited, take a retry
// of their own (retryFailedFlows).
func (b *base) RetryFailed(ctx context.Context, after, upTo driver.FailedKey, limit int, now int64) (int, driver.FailedKey, error) {
	if flows, err := b.anyFailedOfFlow(ctx); err != nil || flows {
		if err != nil {
			return 0, after, err
		}
		return b.retryFailedFlows(ctx, after, upTo, limit, now)
	}
	d := b.dialect()
	query := d.Words(failedBatch)
	if d.PG {
		query = d.Words(failedBatch + " FOR UPDATE SKIP LOCKED")
	}
	from := fromFirst(after)
	var last driver.FailedKey
	var ids []string
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		last, ids = after, nil
		rows, err := tx.QueryContext(ctx, query, from.FailedAt, from.ID, upTo.FailedAt, upTo.ID, limit)
		err = sqlkit.EachRow(rows, err, func(rows *sql.Rows) error {
			err := rows.Scan(&last.FailedAt, &last.ID)
			ids = append(ids, last.ID)
			return err
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		if _, err := b.moveIn(ctx, tx, d.Q(retryIn+enteredColumns), now, sqlkit.List(ids)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, d.Q(failedDel), sqlkit.List(ids))
		return err
	})
	if err != nil {
		return 0, after, err
	}
	return len(ids), last, nil
}
