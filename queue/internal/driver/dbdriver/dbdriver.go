// Package dbdriver stores jobs in the tables jobs and failed_jobs of the
// app's database, SQLite or PostgreSQL.
//
// It talks to database/sql directly, with placeholders the server binds,
// rather than through bun's query builder: the statements are few, fixed
// and on the hot path.
package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// Driver is the database driver.
type Driver struct {
	db    *db.DB
	sqldb *sql.DB // bun's DB would interpolate the arguments itself
	q     statements

	stmts sync.Map // query -> *sql.Stmt, prepared on first use

	notes   sync.Mutex
	pending map[string]bool // queues to announce
	sending bool

	grouping sync.Mutex
	waiting  []*waitingInsert // SQLite: single inserts waiting for the write lock

	host *hostClock // SQLite: the clock of reservations
}

// at is the argument for a time t on the clock of reservations: t itself,
// or for 0 the driver's own clock: on PostgreSQL NULL, which the
// statements read as the server's clock; on SQLite the host's (see
// hostClock).
func (d *Driver) at(ctx context.Context, t int64) (any, error) {
	switch {
	case t != 0:
		return t, nil
	case d.db.Dialect() == db.Postgres:
		return nil, nil
	}
	return d.host.now(ctx, d)
}

// waitingInsert is a single insert waiting for SQLite's write lock, and
// how its caller hears that another wrote it.
type waitingInsert struct {
	job    *driver.Job
	done   chan error
	served context.CancelFunc
}

// insertGrouped stores one job on SQLite, where one process's writes take
// turns: whichever waiting insert gets the write lock stores every insert
// waiting by then in one transaction, and tells their callers. Each still
// returns only once its job is committed; concurrent dispatches share a
// commit instead of queueing for one each (group commit).
func (d *Driver) insertGrouped(ctx context.Context, job *driver.Job) error {
	lockCtx, served := context.WithCancel(ctx)
	defer served()
	w := &waitingInsert{job: job, done: make(chan error, 1), served: served}
	d.grouping.Lock()
	d.waiting = append(d.waiting, w)
	d.grouping.Unlock()
	err := d.db.Write(lockCtx, func() error {
		d.grouping.Lock()
		group := d.waiting
		d.waiting = nil
		d.grouping.Unlock()
		err := d.insertGroup(context.WithoutCancel(ctx), group)
		for _, g := range group {
			g.done <- err
			g.served()
		}
		return nil
	})
	if err != nil {
		// It did not get the lock: another took this job into its group
		// (and cancelled lockCtx), or ctx ended, or the lock cannot be had.
		d.grouping.Lock()
		i := slices.Index(d.waiting, w)
		if i >= 0 { // still waiting: withdrawn, never stored
			d.waiting = slices.Delete(d.waiting, i, i+1)
		}
		d.grouping.Unlock()
		if i >= 0 {
			return err
		}
	}
	return <-w.done
}

// insertGroup stores the jobs of a group: one of them with the prepared
// single insert, more in one transaction. The caller holds the write lock.
func (d *Driver) insertGroup(ctx context.Context, group []*waitingInsert) error {
	switch len(group) {
	case 0: // another took this one's job into its group
		return nil
	case 1:
		st, err := d.prepared(ctx, d.q.insert)
		if err == nil {
			_, err = st.ExecContext(ctx, appendRow(nil, group[0].job)...)
		}
		return err
	}
	jobs := make([]*driver.Job, len(group))
	for i, g := range group {
		jobs[i] = g.job
	}
	tx, err := d.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := d.insertChunks(ctx, tx, jobs); err != nil {
		return err
	}
	return tx.Commit()
}

type statements struct {
	insert, expireUnique, insertUnique, findUnique, reserve, takeOver, behind, stale, unreserve, complete, release,
	failCopy, failDelete, failMove, failed, failedPayloads, retryOne, retryAll, deleteOne, flush, pending, retryMoveOne, retryMoveAll string

	insertFull string // InsertMany's statement for a full chunk
}

const columns = "id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error"

// New returns the driver on d.
func New(d *db.DB) *Driver {
	skipLocked := ""
	if d.Dialect() == db.Postgres {
		skipLocked = " FOR UPDATE SKIP LOCKED"
	}
	values := "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, NULL)"
	// A time on the clock of reservations: an argument, which on
	// PostgreSQL may be NULL for the server's clock (see at).
	at := "?"
	if d.Dialect() == db.Postgres {
		at = "coalesce(?::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint)"
	}
	// The reservations of a queue gone stale by a time; its arguments are
	// queue and that time twice. Every stale reservation is at least
	// GraceMs old: that bound lets the index over reserved rows narrow the
	// search.
	staleWhere := "queue = ? AND reserved_at IS NOT NULL AND reserved_at <= " + at + " - " + strconv.Itoa(driver.GraceMs) +
		" AND reserved_at + CASE WHEN timeout_ms = 0 THEN " + strconv.Itoa(driver.NoLimitStaleMs) + " ELSE timeout_ms + " + strconv.Itoa(driver.GraceMs) + " END <= " + at
	q := statements{
		insert:       "INSERT INTO jobs (" + columns + ") VALUES " + values,
		expireUnique: "UPDATE jobs SET unique_key = NULL WHERE unique_key = ? AND unique_until IS NOT NULL AND unique_until <= ?",
		insertUnique: "INSERT INTO jobs (" + columns + ") VALUES " + values + " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING",
		findUnique:   "SELECT id FROM jobs WHERE unique_key = ? AND unique_key IS NOT NULL",
		reserve: "UPDATE jobs SET reserved_at = ?, attempts = attempts + 1 WHERE id IN (" +
			"SELECT id FROM jobs WHERE queue = ? AND reserved_at IS NULL AND available_at >= ? AND available_at <= ? ORDER BY available_at, id LIMIT ?" +
			") RETURNING " + columns,
		complete: "DELETE FROM jobs WHERE reserved_at IS NOT NULL AND (id, attempts) IN (" +
			"SELECT json_extract(value, '$.id'), json_extract(value, '$.attempt') FROM json_each(?)) RETURNING id",
		takeOver: "UPDATE jobs SET reserved_at = " + at + ", attempts = attempts + 1 WHERE id = (" +
			"SELECT id FROM jobs WHERE " + staleWhere + " ORDER BY reserved_at, id LIMIT 1" + skipLocked + ") RETURNING " + columns,
		behind:    "SELECT 1 FROM jobs WHERE queue = ? AND reserved_at IS NULL AND available_at < ? AND available_at <= ? LIMIT 1",
		stale:     "SELECT 1 FROM jobs WHERE " + staleWhere + " LIMIT 1",
		unreserve: "UPDATE jobs SET reserved_at = NULL, attempts = attempts - 1 WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL",

		release: "UPDATE jobs SET reserved_at = NULL, available_at = ?, last_error = ? WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL",
		// A job taken over after its last attempt counts the attempts
		// it started, not the takeover's reservation.
		failCopy: "INSERT INTO failed_jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at) " +
			"SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, min(attempts, max_attempts), ?, created_at, ? FROM jobs WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL",
		failDelete: "DELETE FROM jobs WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL",
		failMove: "WITH moved AS (DELETE FROM jobs WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL " +
			"RETURNING id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, created_at) " +
			"INSERT INTO failed_jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at) " +
			"SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, least(attempts, max_attempts), ?, created_at, ? FROM moved",
		// Pages of failed jobs, by the index over (failed_at, id).
		failed: "SELECT id, queue, name, '', max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at FROM failed_jobs " +
			"WHERE (failed_at, id) > (?, ?) ORDER BY failed_at, id LIMIT ?",
		failedPayloads: "SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at FROM failed_jobs " +
			"WHERE (failed_at, id) > (?, ?) ORDER BY failed_at, id LIMIT ?",
		retryOne: "INSERT INTO jobs (" + columns + ") SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, NULL, NULL, 0, ?, NULL, created_at, error " +
			"FROM failed_jobs WHERE id = ?",
		retryAll: "INSERT INTO jobs (" + columns + ") SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, NULL, NULL, 0, ?, NULL, created_at, error " +
			"FROM failed_jobs",
		deleteOne: "DELETE FROM failed_jobs WHERE id = ?",
		retryMoveOne: "WITH moved AS (DELETE FROM failed_jobs WHERE id = ? RETURNING *) INSERT INTO jobs (" + columns + ") " +
			"SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, NULL, NULL, 0, ?, NULL, created_at, error FROM moved",
		retryMoveAll: "WITH moved AS (DELETE FROM failed_jobs RETURNING *) INSERT INTO jobs (" + columns + ") " +
			"SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, NULL, NULL, 0, ?, NULL, created_at, error FROM moved",
		flush:   "DELETE FROM failed_jobs",
		pending: "SELECT count(*) FROM jobs WHERE queue = ?",
	}
	if d.Dialect() == db.Postgres {
		// The same statements in PostgreSQL's words: SKIP LOCKED so workers
		// never wait for each other, and the batch as JSON.
		// Reservations and completions commit without waiting for the
		// disk (the setting lasts for their own transaction only): lost in
		// a crash of the server, a reservation leaves its job waiting and a
		// completion leaves its job reserved, to be taken over; either
		// runs again, as at least once allows. Sync, or any commit that
		// waits, makes them durable, the log being written in order. It
		// takes an fsync off the path from dispatch to handler, and the
		// worker's commits off the dispatches' way to the disk.
		//
		// Both find the rows they change by id = ANY(...), an index
		// condition on the primary key, rather than by a join: a vacuum of
		// the table while it is empty records "no rows" in the planner's
		// statistics, and until the next ANALYZE a join was planned as a
		// walk over every row (or every reserved row) of jobs, for each
		// reservation or batch: a second each with 100k jobs waiting. The
		// completion's coalesce keeps it off the index of reserved rows for
		// the same reason.
		q.reserve = "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) " +
			"UPDATE jobs SET reserved_at = " + at + ", attempts = jobs.attempts + 1 FROM lazy WHERE jobs.id = ANY(ARRAY(" +
			"SELECT id FROM jobs WHERE queue = ? AND reserved_at IS NULL AND available_at >= ? AND available_at <= ? " +
			"ORDER BY available_at, id LIMIT ? FOR UPDATE SKIP LOCKED)) RETURNING " + prefixed("jobs.", columns)
		q.complete = "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) " +
			"DELETE FROM jobs j USING lazy, jsonb_to_recordset(?::jsonb) AS d(id uuid, attempt int) " +
			"WHERE j.id = ANY(ARRAY(SELECT a.id FROM jsonb_to_recordset(?::jsonb) AS a(id uuid))) " +
			"AND j.id = d.id AND j.attempts = d.attempt AND coalesce(j.reserved_at, -1) <> -1 RETURNING j.id"
		for _, stmt := range []*string{&q.insert, &q.expireUnique, &q.insertUnique, &q.findUnique, &q.reserve, &q.takeOver, &q.behind, &q.stale, &q.unreserve,
			&q.complete, &q.release, &q.failCopy, &q.failDelete, &q.failMove, &q.failed, &q.failedPayloads, &q.retryOne, &q.retryAll,
			&q.deleteOne, &q.flush, &q.pending, &q.retryMoveOne, &q.retryMoveAll} {
			*stmt = numbered(*stmt)
		}
	}
	drv := &Driver{db: d, sqldb: d.DB.DB, q: q, host: newHostClock()}
	drv.q.insertFull = drv.insertMany(rowsPerInsert)
	return drv
}

// Channel is the PostgreSQL channel a dispatch notifies, with the job's
// queue as the payload.
const Channel = "navree_jobs"

// prepared returns query prepared on the database (database/sql prepares
// it again on each connection that needs it).
func (d *Driver) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := d.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := d.sqldb.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := d.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// prefixed qualifies each column of a list with prefix.
func prefixed(prefix, list string) string {
	cols := strings.Split(list, ", ")
	for i, c := range cols {
		cols[i] = prefix + c
	}
	return strings.Join(cols, ", ")
}

// numbered rewrites a statement's ? placeholders as $1, $2, … for
// PostgreSQL. The statements hold no ? of their own.
func numbered(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// appendRow appends the values of insert's placeholders for j.
func appendRow(args []any, j *driver.Job) []any {
	return append(args, j.ID, j.Queue, j.Name, string(j.Payload), j.MaxAttempts, j.Backoff, j.TimeoutMs,
		nullString(j.UniqueKey), nullInt(j.UniqueUntil), j.AvailableAt, j.CreatedAt)
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

// tx returns the transaction of uow when uow is a unit of work of d's
// database, else nil.
func (d *Driver) tx(ctx context.Context, uow *db.UnitOfWork) (*sql.Tx, error) {
	if uow == nil || uow.DB() != d.db {
		return nil, nil
	}
	tx, err := uow.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Tx, nil
}

// inTx runs fn in the transaction of uow when uow belongs to d's
// database, else in a transaction of its own.
func (d *Driver) inTx(ctx context.Context, uow *db.UnitOfWork, fn func(tx *sql.Tx) error) error {
	tx, err := d.tx(ctx, uow)
	if err != nil {
		return err
	}
	if tx != nil {
		return fn(tx)
	}
	return d.db.Transaction(ctx, func(ctx context.Context) error {
		return d.inTx(ctx, db.UnitOfWorkFrom(ctx), fn)
	})
}

// Insert implements driver.Driver.
func (d *Driver) Insert(ctx context.Context, uow *db.UnitOfWork, job *driver.Job, now int64) (string, bool, error) {
	args := appendRow(nil, job)
	if job.UniqueKey == "" { // one statement: its own transaction is enough
		tx, err := d.tx(ctx, uow)
		if err != nil {
			return "", false, err
		}
		switch {
		case tx != nil:
			_, err = tx.ExecContext(ctx, d.q.insert, args...)
		case d.db.Dialect() == db.SQLite:
			err = d.insertGrouped(ctx, job)
		default:
			_, err = d.write(ctx, d.q.insert, args...)
		}
		if err != nil {
			return "", false, err
		}
		return job.ID, true, nil
	}
	// Three statements in one transaction, so no other dispatch slips
	// between them.
	id, inserted := job.ID, true
	err := d.inTx(ctx, uow, func(tx *sql.Tx) error {
		// A pending job past its window no longer holds the key.
		if _, err := tx.ExecContext(ctx, d.q.expireUnique, job.UniqueKey, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, d.q.insertUnique, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		inserted = false
		if err := tx.QueryRowContext(ctx, d.q.findUnique, job.UniqueKey).Scan(&id); err != nil {
			return fmt.Errorf("find the pending job with unique key %q: %w", job.UniqueKey, err)
		}
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return id, inserted, nil
}

// rowsPerInsert bounds a multi-row insert: 11 parameters a row stays
// under SQLite's 32,766 and PostgreSQL's 65,535.
const rowsPerInsert = 500

// insertMany is the multi-row insert of n jobs.
func (d *Driver) insertMany(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO jobs (" + columns + ") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, NULL)")
	}
	if d.db.Dialect() == db.Postgres {
		return numbered(b.String())
	}
	return b.String()
}

// InsertMany implements driver.Driver. Outside a unit of work the batch
// is stored all or none: with COPY on PostgreSQL, in one transaction on
// SQLite.
func (d *Driver) InsertMany(ctx context.Context, uow *db.UnitOfWork, jobs []*driver.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	tx, err := d.tx(ctx, uow)
	if err != nil {
		return err
	}
	if tx == nil && d.db.Dialect() == db.Postgres {
		return d.copyJobs(ctx, jobs)
	}
	return d.inTx(ctx, uow, func(tx *sql.Tx) error { return d.insertChunks(ctx, tx, jobs) })
}

// insertChunks stores jobs in multi-row inserts on tx.
func (d *Driver) insertChunks(ctx context.Context, tx *sql.Tx, jobs []*driver.Job) error {
	args := make([]any, 0, 11*min(len(jobs), rowsPerInsert))
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), rowsPerInsert)]
		jobs = jobs[len(chunk):]
		args = args[:0]
		for _, j := range chunk {
			args = appendRow(args, j)
		}
		query := d.q.insertFull
		if len(chunk) < rowsPerInsert {
			query = d.insertMany(len(chunk))
		}
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// copyColumns are the columns COPY fills; the others take their
// defaults.
var copyColumns = []string{"id", "queue", "name", "payload", "max_attempts", "backoff", "timeout_ms", "available_at", "created_at"}

// copyJobs stores jobs with PostgreSQL's COPY, the fastest bulk insert.
func (d *Driver) copyJobs(ctx context.Context, jobs []*driver.Job) error {
	conn, err := d.sqldb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		pg := driverConn.(*stdlib.Conn).Conn()
		rows := make([][]any, len(jobs))
		for i, j := range jobs {
			rows[i] = []any{j.ID, j.Queue, j.Name, string(j.Payload), j.MaxAttempts, j.Backoff, j.TimeoutMs, j.AvailableAt, j.CreatedAt}
		}
		_, err := pg.CopyFrom(ctx, pgx.Identifier{"jobs"}, copyColumns, pgx.CopyFromRows(rows))
		return err
	})
}

// scanJob reads a row of columns. A row whose values do not all convert
// to their types is read leniently (see readJob) rather than failing, so
// one corrupt row never fails the statement that returned it.
func scanJob(row scanner) (*driver.Job, error) {
	var j driver.Job
	var payload string
	var uniqueKey, lastError sql.NullString
	var uniqueUntil, reservedAt sql.NullInt64
	err := row.Scan(&j.ID, &j.Queue, &j.Name, &payload, &j.MaxAttempts, &j.Backoff, &j.TimeoutMs,
		&uniqueKey, &uniqueUntil, &j.Attempts, &j.AvailableAt, &reservedAt, &j.CreatedAt, &lastError)
	if err != nil {
		return readJob(row, err)
	}
	j.Payload = []byte(payload)
	j.UniqueKey, j.UniqueUntil, j.ReservedAt, j.LastError = uniqueKey.String, uniqueUntil.Int64, reservedAt.Int64, lastError.String
	return &j, nil
}

// Reserve implements driver.Driver.
func (d *Driver) Reserve(ctx context.Context, queue string, now, at, from int64, limit int) ([]*driver.Job, error) {
	stamp, err := d.at(ctx, at)
	if err != nil {
		return nil, err
	}
	args := []any{stamp, queue, from, now, limit}
	var jobs []*driver.Job
	err = d.query(ctx, d.q.reserve, args, func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		jobs = append(jobs, j)
		return err
	})
	if err != nil {
		return nil, err
	}
	// RETURNING gives no order.
	slices.SortFunc(jobs, func(a, b *driver.Job) int {
		return cmp.Or(cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
	})
	return jobs, nil
}

// query runs a prepared write statement that returns rows, and calls row
// for each, holding the process's SQLite write lock until the statement
// is done.
func (d *Driver) query(ctx context.Context, query string, args []any, row func(*sql.Rows) error) error {
	st, err := d.prepared(ctx, query)
	if err != nil {
		return err
	}
	return d.db.Write(ctx, func() error {
		rows, err := st.QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := row(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// TakeOver implements driver.Driver.
func (d *Driver) TakeOver(ctx context.Context, queue string, now int64) (*driver.Job, error) {
	at, err := d.at(ctx, now)
	if err != nil {
		return nil, err
	}
	var j *driver.Job
	err = d.query(ctx, d.q.takeOver, []any{at, queue, at, at}, func(rows *sql.Rows) (err error) {
		j, err = scanJob(rows)
		return err
	})
	return j, err
}

// Behind implements driver.Driver.
func (d *Driver) Behind(ctx context.Context, queue string, now, from int64) (bool, error) {
	return d.exists(ctx, d.q.behind, queue, from, now)
}

// Stale implements driver.Driver.
func (d *Driver) Stale(ctx context.Context, queue string, now int64) (bool, error) {
	at, err := d.at(ctx, now)
	if err != nil {
		return false, err
	}
	return d.exists(ctx, d.q.stale, queue, at, at)
}

// exists runs a prepared read that selects a row or none, outside the
// write lock: on SQLite it reads a snapshot while another writes.
func (d *Driver) exists(ctx context.Context, query string, args ...any) (bool, error) {
	st, err := d.prepared(ctx, query)
	if err != nil {
		return false, err
	}
	var one int
	switch err := st.QueryRowContext(ctx, args...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

func (d *Driver) exec(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := d.write(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// write runs one write statement on its own, prepared, holding the
// process's SQLite write lock.
func (d *Driver) write(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	st, err := d.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	err = d.db.Write(ctx, func() error {
		res, err = st.ExecContext(ctx, args...)
		return err
	})
	return res, err
}

// Unreserve implements driver.Driver.
func (d *Driver) Unreserve(ctx context.Context, id string, attempt int) (bool, error) {
	return d.exec(ctx, d.q.unreserve, id, attempt)
}

// Complete implements driver.Driver.
func (d *Driver) Complete(ctx context.Context, done []driver.Attempt) ([]string, error) {
	batch, err := json.Marshal(done)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(done))
	args := []any{string(batch)}
	if d.db.Dialect() == db.Postgres {
		args = append(args, args[0]) // it reads the batch twice
	}
	err = d.query(ctx, d.q.complete, args, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Sync implements driver.Driver. On PostgreSQL it commits a transaction
// that waits for the disk: the server's log is written in order, so the
// commits before it, those that did not wait, are then durable too. The
// server waits only for a commit that has a transaction id and wrote to
// the log; a transactional logical message (prefix "navree", empty) is
// the smallest such write, needs no table and no privilege, and changes
// no data. SQLite's commits are as durable as
// database.sqlite_synchronous makes them when they return.
func (d *Driver) Sync(ctx context.Context) error {
	if d.db.Dialect() != db.Postgres {
		return nil
	}
	_, err := d.sqldb.ExecContext(ctx, "SELECT pg_logical_emit_message(true, 'navree', '')")
	return err
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, id string, attempt int, availableAt int64, lastError string) (bool, error) {
	return d.exec(ctx, d.q.release, availableAt, lastError, id, attempt)
}

// Fail implements driver.Driver.
func (d *Driver) Fail(ctx context.Context, id string, attempt int, failure string, now int64) (bool, error) {
	if d.db.Dialect() == db.Postgres {
		return d.exec(ctx, d.q.failMove, id, attempt, failure, now)
	}
	var moved bool
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, d.q.failCopy, failure, now, id, attempt)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, d.q.failDelete, id, attempt); err != nil {
			return err
		}
		moved = true
		return nil
	})
	return moved, err
}

// Failed implements driver.Driver.
func (d *Driver) Failed(ctx context.Context, after driver.FailedKey, limit int, payloads bool) ([]driver.FailedJob, error) {
	query := d.q.failed
	if payloads {
		query = d.q.failedPayloads
	}
	if after == (driver.FailedKey{}) {
		after = driver.FailedKey{FailedAt: math.MinInt64, ID: "00000000-0000-0000-0000-000000000000"}
	}
	rows, err := d.sqldb.QueryContext(ctx, query, after.FailedAt, after.ID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.FailedJob
	for rows.Next() {
		var f driver.FailedJob
		var payload string
		err := rows.Scan(&f.ID, &f.Queue, &f.Name, &payload, &f.MaxAttempts, &f.Backoff, &f.TimeoutMs,
			&f.Attempts, &f.Error, &f.CreatedAt, &f.FailedAt)
		f.Payload = []byte(payload)
		if err != nil {
			if f, err = readFailed(rows, err); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Retry implements driver.Driver.
func (d *Driver) Retry(ctx context.Context, id string, all bool, now int64) (int, error) {
	if d.db.Dialect() == db.Postgres {
		// One statement moves exactly the rows it deletes, whatever fails meanwhile.
		res, err := d.sqldb.ExecContext(ctx, d.q.retryMoveOne, id, now)
		if all {
			res, err = d.sqldb.ExecContext(ctx, d.q.retryMoveAll, now)
		}
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 && !all {
			return 0, driver.ErrNoFailedJob
		}
		return int(n), err
	}
	// On SQLite the transaction holds the write lock: nothing fails between
	// the copy and the delete.
	var moved int64
	err := d.inTx(ctx, nil, func(tx *sql.Tx) error {
		insert, remove, args := d.q.retryOne, d.q.deleteOne, []any{now, id}
		if all {
			insert, remove, args = d.q.retryAll, d.q.flush, []any{now}
		}
		res, err := tx.ExecContext(ctx, insert, args...)
		if err != nil {
			return err
		}
		if moved, err = res.RowsAffected(); err != nil {
			return err
		}
		if moved == 0 && !all {
			return driver.ErrNoFailedJob
		}
		_, err = tx.ExecContext(ctx, remove, args[1:]...)
		return err
	})
	return int(moved), err
}

// FlushFailed implements driver.Driver.
func (d *Driver) FlushFailed(ctx context.Context) (int, error) {
	res, err := d.write(ctx, d.q.flush)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Announce tells the workers of every process that a job was committed
// on queue: on PostgreSQL a NOTIFY on Channel, sent after the commit by
// one goroutine that merges the announcements made while it sends, so
// dispatches never wait for it. (A NOTIFY inside each inserting
// transaction serializes their commits: single dispatches fell from
// ~2,350 to ~1,350 jobs/s here.) Elsewhere it does nothing.
func (d *Driver) Announce(queue string) {
	if d.db.Dialect() != db.Postgres {
		return
	}
	d.notes.Lock()
	if d.pending == nil {
		d.pending = map[string]bool{}
	}
	d.pending[queue] = true
	sending := d.sending
	d.sending = true
	d.notes.Unlock()
	if !sending {
		go d.sendNotes()
	}
}

func (d *Driver) sendNotes() {
	for {
		d.notes.Lock()
		if len(d.pending) == 0 {
			d.sending = false
			d.notes.Unlock()
			return
		}
		queues := slices.Collect(maps.Keys(d.pending))
		clear(d.pending)
		d.notes.Unlock()
		// Best effort: a lost notification costs a poll interval, nothing
		// more, so its commit need not wait for the disk.
		_ = d.announce(queues)
	}
}

// announce notifies Channel of queues in one statement: one round trip,
// so the connection it takes from the pool is back at once. Its commit
// does not wait for the disk: a transaction that only notifies writes
// nothing else to the log, and PostgreSQL flushes the log at commit only
// for one that did (200 such commits caused 2 WAL syncs here, against 200
// for 200 commits that wrote a logical message).
func (d *Driver) announce(queues []string) error {
	_, err := d.sqldb.ExecContext(context.Background(), "SELECT pg_notify('"+Channel+"', q) FROM unnest($1::text[]) AS q", queues)
	return err
}

// Listen calls wake with the queue of each job dispatched by any process,
// until ctx ends: on PostgreSQL, through LISTEN on a connection of its
// own, outside the pool; on SQLite it returns at once (other processes
// are found by polling). A lost connection is reported to failed and
// retried with a growing pause; connected is called each time it
// listens.
func (d *Driver) Listen(ctx context.Context, wake func(queue string), connected func(), failed func(error)) {
	if d.db.Dialect() != db.Postgres {
		return
	}
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listen(ctx, wake, connected)
		if ctx.Err() != nil {
			return
		}
		failed(err)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

func (d *Driver) listen(ctx context.Context, wake func(string), connected func()) error {
	conn, err := d.db.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		wake(n.Payload)
	}
}

// Purge implements driver.Driver.
func (d *Driver) Purge(ctx context.Context, queue string) (int, error) {
	query := "DELETE FROM jobs WHERE queue = ?"
	if d.db.Dialect() == db.Postgres {
		query = numbered(query)
	}
	res, err := d.write(ctx, query, queue)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// PendingCount implements driver.Driver.
func (d *Driver) PendingCount(ctx context.Context, queue string) (int, error) {
	var n int
	err := d.sqldb.QueryRowContext(ctx, d.q.pending, queue).Scan(&n)
	return n, err
}
