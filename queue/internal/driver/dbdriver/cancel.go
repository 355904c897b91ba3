package dbdriver

import (
	"context"
	"database/sql"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// The statements of Cancel, in the words of SQLite (the driver's dialect
// puts them in PostgreSQL's).
const (
	forgetFinished = "DELETE FROM queue_cancels WHERE job_id NOT IN (SELECT id FROM jobs WHERE reserved_at IS NOT NULL)"
	cancelCopy     = failedInsert + "SELECT id, attempts, '" + driver.CancelledError + "', ?, errors, snoozes, " + settings + " FROM jobs " +
		"WHERE id = ? AND reserved_at IS NULL"
	cancelDelete  = "DELETE FROM jobs WHERE id = ? AND reserved_at IS NULL"
	cancelRequest = "INSERT INTO queue_cancels (job_id, requested_at) SELECT id, ? FROM jobs WHERE id = ? AND reserved_at IS NOT NULL " +
		"ON CONFLICT (job_id) DO NOTHING"
	isRunning    = "SELECT count(*) FROM jobs WHERE id = ? AND reserved_at IS NOT NULL"
	forgetCancel = "DELETE FROM queue_cancels WHERE job_id = ?"
)

// Cancel implements driver.Driver.
func (s *sqliteDriver) Cancel(ctx context.Context, id string, now int64) (driver.Cancelled, error) {
	var did driver.Cancelled
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		did, err = cancel(ctx, tx, id, now, s.base)
		return err
	})
	if err == nil && did == 0 {
		return 0, driver.ErrNoJob
	}
	return did, err
}

// Cancel implements driver.Driver. A request is told to the listening
// workers by a NOTIFY that reaches them when it commits.
func (p *postgresDriver) Cancel(ctx context.Context, id string, now int64) (driver.Cancelled, error) {
	tx, err := p.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	did, err := cancel(ctx, tx, id, now, p.base)
	if err != nil {
		return 0, err
	}
	if did == driver.Signalled {
		if _, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", Channel, driver.CancelNote+id); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil || did != 0 {
		return did, err
	}
	return 0, driver.ErrNoJob
}

// cancel is Cancel in tx, its statements in b's words; 0 for an id that
// is no job waiting, held or running (the transaction still commits what
// it forgot). A job of a flow ends its step, resolved in tx; a limited
// job's slot goes to the next held job of its key (admit).
func cancel(ctx context.Context, tx *sql.Tx, id string, now int64, b *base) (driver.Cancelled, error) {
	d := b.dialect()
	words := d.Words
	if _, err := tx.ExecContext(ctx, words(forgetFinished)); err != nil {
		return 0, err
	}
	removed := false
	which, arg := byIDs(d, true, id)
	err := b.moveOut(ctx, tx, which, arg, func() error {
		res, err := tx.ExecContext(ctx, words(cancelCopy), now, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			removed = true
			_, err = tx.ExecContext(ctx, words(cancelDelete), id)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	if removed {
		var flow string
		if err := tx.QueryRowContext(ctx, d.Q(flowOfFailed), id).Scan(&flow); err != nil || flow == "" {
			return driver.Removed, err
		}
		t := newFlowTx(ctx, tx, b)
		if err := stepFailed(t, id, driver.CancelledError, now); err != nil {
			return 0, err
		}
		return driver.Removed, t.notify()
	}
	if held, err := cancelHeldJob(ctx, tx, d, id, now); err != nil || held {
		if held {
			return driver.Removed, nil
		}
		return 0, err
	}
	var running int
	if err := tx.QueryRowContext(ctx, words(isRunning), id).Scan(&running); err != nil {
		return 0, err
	}
	if running == 0 {
		return 0, nil
	}
	_, err = tx.ExecContext(ctx, words(cancelRequest), now, id)
	return driver.Signalled, err
}

// CancelRequested implements driver.Driver.
func (s *sqliteDriver) CancelRequested(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return s.ids(ctx, "SELECT job_id FROM queue_cancels WHERE job_id IN ("+strings.Repeat("?, ", len(ids)-1)+"?)", args...)
}

// CancelRequested implements driver.Driver.
func (p *postgresDriver) CancelRequested(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return p.ids(ctx, "SELECT job_id::text FROM queue_cancels WHERE job_id = ANY($1::uuid[])", ids)
}

// ForgetCancel implements driver.Driver.
func (s *sqliteDriver) ForgetCancel(ctx context.Context, id string) error {
	_, err := s.sqldb.ExecContext(ctx, forgetCancel, id)
	return err
}

// ForgetCancel implements driver.Driver.
func (p *postgresDriver) ForgetCancel(ctx context.Context, id string) error {
	_, err := p.sqldb.ExecContext(ctx, p.d.Words(forgetCancel), id)
	return err
}

// ids runs a query of one text column and reads it.
func (b *base) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	return sqlkit.Texts(ctx, b.sqldb, query, args...)
}

// querier is a database or a transaction.
