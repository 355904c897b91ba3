package dbdriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// appendRow appends the values of insert's placeholders for j.
func appendRow(args []any, j *driver.Job) []any {
	return append(args, j.ID, j.Queue, j.Name, string(j.Payload), j.MaxAttempts, j.Backoff.String(), j.TimeoutMs,
		nullString(j.UniqueKey), nullInt(j.UniqueUntil), j.AvailableAt, j.CreatedAt, nullBytes(j.Meta))
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// Insert implements driver.Driver.
func (b *base) Insert(ctx context.Context, uow *db.UnitOfWork, job *driver.Job, now int64) (string, bool, error) {
	if job.UniqueKey != "" {
		var id string
		var inserted bool
		err := b.inTx(ctx, uow, func(tx *sql.Tx) (err error) {
			id, inserted, err = b.insertUnique(ctx, tx, job, now)
			return err
		})
		return id, inserted, err
	}
	tx, err := b.tx(ctx, uow)
	switch {
	case err != nil:
	case tx != nil:
		_, err = tx.ExecContext(ctx, b.q.insert, appendRow(nil, job)...)
	default: // one statement: its own transaction is enough
		err = b.alone(ctx, job)
	}
	if err != nil {
		return "", false, err
	}
	return job.ID, true, nil
}

// insertUnique stores a job with a unique key in tx, unless a pending job
// holds the key: it returns that job's id then. Three statements in one
// transaction, so that no other dispatch slips between them.
func (b *base) insertUnique(ctx context.Context, tx *sql.Tx, job *driver.Job, now int64) (string, bool, error) {
	// A pending job past its window no longer holds the key.
	if _, err := tx.ExecContext(ctx, b.q.expireUnique, job.UniqueKey, now); err != nil {
		return "", false, err
	}
	res, err := tx.ExecContext(ctx, b.q.insertUnique, appendRow(nil, job)...)
	if err != nil {
		return "", false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return job.ID, err == nil, err
	}
	var id string
	if err := tx.QueryRowContext(ctx, b.q.findUnique, job.UniqueKey).Scan(&id); err != nil {
		return "", false, fmt.Errorf("find the pending job with unique key %q: %w", job.UniqueKey, err)
	}
	return id, false, nil
}

// InsertMany implements driver.Driver: jobs without a unique key in
// multi-row inserts (outside a unit of work, as the driver stores a batch
// fastest: COPY on PostgreSQL), unique ones each with its check, all or
// none.
func (b *base) InsertMany(ctx context.Context, uow *db.UnitOfWork, jobs []*driver.Job, now int64) ([]string, error) {
	ids := make([]string, len(jobs))
	var plain []*driver.Job
	for i, j := range jobs {
		ids[i] = j.ID
		if j.UniqueKey == "" {
			plain = append(plain, j)
		}
	}
	tx, err := b.tx(ctx, uow)
	if err != nil {
		return nil, err
	}
	if tx == nil && len(plain) == len(jobs) {
		if len(jobs) > 0 {
			err = b.bulk(ctx, jobs)
		}
		return ids, err
	}
	err = b.inTx(ctx, uow, func(tx *sql.Tx) error {
		for i, j := range jobs {
			if j.UniqueKey == "" {
				continue
			}
			id, _, err := b.insertUnique(ctx, tx, j, now)
			if err != nil {
				return err
			}
			ids[i] = id
		}
		return b.insertChunks(ctx, tx, plain)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// insertChunks stores jobs in multi-row inserts on tx.
func (b *base) insertChunks(ctx context.Context, tx *sql.Tx, jobs []*driver.Job) error {
	args := make([]any, 0, 12*min(len(jobs), rowsPerInsert))
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), rowsPerInsert)]
		jobs = jobs[len(chunk):]
		args = args[:0]
		for _, j := range chunk {
			args = appendRow(args, j)
		}
		query := b.q.insertFull
		if len(chunk) < rowsPerInsert {
			query = b.q.insertRows(len(chunk))
		}
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return err
		}
	}
	return nil
}
