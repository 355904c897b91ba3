package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
	"modernc.org/sqlite"
)

// sqliteDriver is the driver on SQLite.
type sqliteDriver struct {
	*base
	host *hostClock // the clock of reservations

	group grouper // single inserts, which take turns at the write lock
}

func newSQLite(d *db.DB) *sqliteDriver {
	s := &sqliteDriver{base: newBase(d, sqliteStatements()), host: newHostClock()}
	s.at = s.reservedAt
	s.w = newWorkerStatements("?", "SELECT id, attempts FROM jobs WHERE reserved_at IS NOT NULL AND id IN (SELECT value FROM json_each(?))",
		sqlkit.SQLite.Render)
	s.group = grouper{turn: d.Write, store: s.insertGroup, each: constraint}
	s.alone = s.group.insert
	s.bulk = func(ctx context.Context, jobs []*driver.Job) error {
		return s.inTx(ctx, nil, func(tx *sql.Tx) error { return s.insertChunks(ctx, tx, nil, jobs, false) })
	}
	return s
}

// reservedAt is the argument for a time t on the clock of reservations:
// t, or for 0 the host's (see hostClock).
func (s *sqliteDriver) reservedAt(ctx context.Context, t int64) (any, error) {
	if t != 0 {
		return t, nil
	}
	return s.host.now(ctx, s.base)
}

// constraint reports whether err is SQLite's SQLITE_CONSTRAINT (any
// extended code): a statement refused, whose transaction stored nothing.
func constraint(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 19
}

// insertGroup stores the jobs of a group (see grouper): one of them with
// the prepared single insert, more in one transaction. The caller holds
// the write lock.
func (s *sqliteDriver) insertGroup(ctx context.Context, jobs []*driver.Job) error {
	if len(jobs) == 1 && !fair.Unplaced(jobs[0]) && !hasFeatures(jobs[0]) {
		return s.insertAlone(ctx, jobs[0])
	}
	tx, err := s.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.placeAll(ctx, tx, jobs); err != nil {
		return err
	}
	if err := s.insertChunks(ctx, tx, nil, jobs, false); err != nil {
		return err
	}
	return tx.Commit()
}

// The statements that move a job between jobs and failed_jobs, in two
// halves that a transaction holding the write lock keeps together.
const (
	sqliteFailCopy = failedInsert + "SELECT id, min(attempts, max_attempts), ?, ?, " + sqliteAppendError + ", snoozes, " + settings + " FROM jobs " +
		"WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL"
	sqliteFailDelete = "DELETE FROM jobs WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL"
	sqliteRetryOne   = retriedInto + " FROM failed_jobs WHERE id = ?" + enteredColumns
	sqliteDeleteOne  = "DELETE FROM failed_jobs WHERE id = ?"
)

// Fail implements driver.Driver.
func (s *sqliteDriver) Fail(ctx context.Context, id string, attempt int, f driver.Failure) (bool, error) {
	entry, err := json.Marshal(f)
	if err != nil {
		return false, err
	}
	var moved bool
	err = s.inTx(ctx, nil, func(tx *sql.Tx) error {
		which, arg := byIDs(s.d, f.Limit != "", id)
		err := s.moveOut(ctx, tx, which, arg, func() error {
			res, err := tx.ExecContext(ctx, sqliteFailCopy, f.Error, f.At, string(entry), id, attempt)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return nil
			}
			moved = true
			_, err = tx.ExecContext(ctx, sqliteFailDelete, id, attempt)
			return err
		})
		if err != nil || !moved {
			return err
		}
		if f.Flow != "" {
			return stepFailed(newFlowTx(ctx, tx, s.base), id, f.Error, f.At)
		}
		return nil
	})
	return moved, err
}

// Retry implements driver.Driver.
func (s *sqliteDriver) Retry(ctx context.Context, id string, now int64) error {
	return s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var flow, key string
		switch err := tx.QueryRowContext(ctx, routeOf, id).Scan(&flow, &key); {
		case errors.Is(err, sql.ErrNoRows):
			return driver.ErrNoFailedJob
		case err != nil:
			return err
		case flow != "":
			_, err := retryFlow(newFlowTx(ctx, tx, s.base), flow, now)
			return err
		case key != "":
			return retryHeld(newFlowTx(ctx, tx, s.base), []string{id}, now)
		}
		moved, err := s.moveIn(ctx, tx, sqliteRetryOne, now, id)
		if err != nil {
			return err
		}
		if len(moved) == 0 {
			return driver.ErrNoFailedJob
		}
		_, err = tx.ExecContext(ctx, sqliteDeleteOne, id)
		return err
	})
}

// Sync implements driver.Driver: SQLite's commits are as durable as
// database.sqlite_synchronous makes them when they return.
func (s *sqliteDriver) Sync(context.Context) error { return nil }

// Purge implements driver.Driver.
func (s *sqliteDriver) Purge(ctx context.Context, queue string) (int, error) {
	return s.purge(ctx, queue)
}
