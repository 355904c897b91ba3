package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/navree/navree/queue/internal/control/history"

	"github.com/navree/navree/queue/internal/driver"
)

// The statements of Lookup that read a job's errors where it is.
const (
	lookupErrors    = "SELECT errors, reserved_by FROM jobs WHERE id = ?"
	lookupFailedErr = "SELECT errors FROM failed_jobs WHERE id = ?"
)

// Complete implements driver.Driver.
func (s *sqliteDriver) Complete(ctx context.Context, done []driver.Attempt, keep bool) ([]string, error) {
	if anyLimited(done) {
		return s.completeIn(ctx, done, keep, nil)
	}
	if !keep {
		return s.complete(ctx, done, s.q.complete)
	}
	batch, err := json.Marshal(done)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(done))
	kept, err := s.prepared(ctx, history.SQLiteKeep)
	if err != nil {
		return nil, err
	}
	del, err := s.prepared(ctx, s.q.complete)
	if err != nil {
		return nil, err
	}
	err = s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := kept.in(ctx, tx).ExecContext(ctx, string(batch)); err != nil {
			return err
		}
		rows, err := del.in(ctx, tx).QueryContext(ctx, string(batch))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Complete implements driver.Driver.
func (p *postgresDriver) Complete(ctx context.Context, done []driver.Attempt, keep bool) ([]string, error) {
	if anyLimited(done) {
		return p.completeIn(ctx, done, keep, nil)
	}
	if !keep {
		return p.complete(ctx, done, p.q.complete)
	}
	ids, err := p.complete(ctx, done, history.PgKeepFirst)
	if keptAlready(err) {
		return p.complete(ctx, done, history.PgKeep)
	}
	return ids, err
}

// keptAlready reports whether err is PostgreSQL's refusal of a success
// whose id succeeded_jobs holds already (a unique violation of its
// primary key): the statement did nothing.
func keptAlready(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "succeeded_jobs_pkey"
}

// Lookup implements driver.Driver.
func (b *base) Lookup(ctx context.Context, id string) (driver.Found, error) {
	return b.lookup(ctx, b.d.Words, id)
}

// jobIDs is the search of JobIDs: each table's ids in the range, in
// order, as many as asked at most (a range of its primary key, which
// stops there), then the first of them all.
const jobIDs = "SELECT id FROM (SELECT id FROM jobs WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?) AS waiting" +
	" UNION SELECT id FROM (SELECT id FROM queue_held WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?) AS held" +
	" UNION SELECT id FROM (SELECT id FROM failed_jobs WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?) AS failed" +
	" UNION SELECT id FROM (SELECT id FROM succeeded_jobs WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?) AS kept" +
	" ORDER BY id LIMIT ?"

// JobIDs implements driver.Driver.
func (s *sqliteDriver) JobIDs(ctx context.Context, from, to string, limit int) ([]string, error) {
	return s.jobIDs(ctx, jobIDs, from, to, limit)
}

// JobIDs implements driver.Driver.
func (p *postgresDriver) JobIDs(ctx context.Context, from, to string, limit int) ([]string, error) {
	return p.jobIDs(ctx, p.d.Words(jobIDs), from, to, limit)
}

// jobIDs runs query, the search of JobIDs in the database's words.
func (b *base) jobIDs(ctx context.Context, query, from, to string, limit int) ([]string, error) {
	var args []any
	for range 4 {
		args = append(args, from, to, limit)
	}
	rows, err := b.sqldb.QueryContext(ctx, query, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, strings.ToLower(id))
	}
	return ids, rows.Err()
}

// lookup looks for the job id in jobs, then failed_jobs, then
// succeeded_jobs, with the statements in the database's words.
func (b *base) lookup(ctx context.Context, words func(string) string, id string) (driver.Found, error) {
	var found driver.Found
	rows, err := b.sqldb.QueryContext(ctx, words(lookupJob), id)
	if err != nil {
		return found, err
	}
	defer rows.Close()
	if rows.Next() {
		if found.Job, err = scanJob(rows); err != nil {
			return found, err
		}
		rows.Close()
		var errs, by sql.NullString
		if err := b.sqldb.QueryRowContext(ctx, words(lookupErrors), id).Scan(&errs, &by); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return found, err
		}
		found.Job.Errors, found.Job.ReservedBy = parseErrors(errs), by.String
		return found, nil
	}
	if err := rows.Err(); err != nil {
		return found, err
	}
	rows.Close()
	if found.Job, err = b.lookupHeldJob(ctx, id); err != nil || found.Job != nil {
		return found, err
	}
	failed, err := b.sqldb.QueryContext(ctx, words(lookupFailed), id)
	if err != nil {
		return found, err
	}
	defer failed.Close()
	if failed.Next() {
		f, err := scanFailed(failed)
		if err != nil {
			return found, err
		}
		failed.Close()
		found.Failed = &f
		f.Errors, err = b.errorsOf(ctx, words(lookupFailedErr), id)
		found.Failed.Errors = f.Errors
		return found, err
	}
	if err := failed.Err(); err != nil {
		return found, err
	}
	var sj driver.SucceededJob
	var payload string
	var worker, errs, meta sql.NullString
	err = b.sqldb.QueryRowContext(ctx, words(history.Lookup), id).Scan(&sj.ID, &sj.Queue, &sj.Name, &payload, &sj.MaxAttempts, &sj.Attempts,
		&sj.CreatedAt, &sj.FinishedAt, &sj.RunMs, &sj.WaitMs, &worker, &errs, &meta, &sj.Snoozes)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return found, driver.ErrNoJob
	case err != nil:
		return found, err
	}
	sj.Payload, sj.Worker, sj.Errors = []byte(payload), worker.String, parseErrors(errs)
	if meta.Valid {
		sj.Meta = []byte(meta.String)
	}
	found.Succeeded = &sj
	return found, nil
}

// errorsOf reads the errors of the job id with query.
func (b *base) errorsOf(ctx context.Context, query, id string) ([]driver.Failure, error) {
	var errs sql.NullString
	if err := b.sqldb.QueryRowContext(ctx, query, id).Scan(&errs); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return parseErrors(errs), nil
}

// parseErrors reads a stored errors column: a JSON array of failures. One
// that does not read is one failure saying so, rather than an error that
// would hide the job.
func parseErrors(s sql.NullString) []driver.Failure {
	if !s.Valid || s.String == "" {
		return nil
	}
	var out []driver.Failure
	if err := json.Unmarshal([]byte(s.String), &out); err != nil {
		return []driver.Failure{{Error: fmt.Sprintf("the stored errors do not read (column errors holds %q): %v", cut(s.String, 60), err)}}
	}
	return out
}

// cut shortens s to n bytes at most.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// PruneSucceeded implements driver.Driver.
func (b *base) PruneSucceeded(ctx context.Context, before int64, limit int) (int, error) {
	return b.count(ctx, b.d.Words(history.Prune), before, limit)
}
