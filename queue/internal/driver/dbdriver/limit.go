package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Concurrency limits (see driver.Job.LimitKey). A limited job is stored
// in jobs while its key has room, else held in queue_held; the trigger
// jobs_admit (migration 0014) moves the next held job of a key into jobs
// in the transaction that deletes a job of that key, whichever statement
// deletes it: a completion, a failure, a cancel, a purge. What the
// driver does itself is the rest: hold at dispatch and at retry, cancel
// and look up held jobs, count them.
//
// On PostgreSQL every transaction that counts the jobs of a key takes the
// key's lock first (an advisory lock, held to its commit: lockKeys, or
// navree_admit itself), so that two of them never fill one slot; one
// that stores or deletes the jobs of several keys takes their locks
// first, in one statement, in the database's order of them, so that two
// such transactions never wait for each other (a deadlock). On SQLite
// every write transaction holds the file's write lock.

// The statements of limits, in SQLite's words with LIST for a list of ids.
const (
	heldColumns = columns + ", errors"
	// limitRoom counts the jobs of a key and whether any is held.
	limitRoom   = "SELECT (SELECT count(*) FROM jobs WHERE limit_key = ?), (SELECT count(*) FROM (SELECT 1 FROM queue_held WHERE limit_key = ? LIMIT 1) AS h)"
	limitInsert = "INSERT INTO jobs (" + columns + ") VALUES " + keyedValues
	heldInsert  = "INSERT INTO queue_held (" + columns + ") VALUES " + keyedValues
	// The trigger's admission, for SQLite: the next held job of a key into
	// jobs if the key has room, then out of queue_held (the trigger's keeps
	// it due no earlier than the job that left; one a dispatch or a retry
	// admits keeps its own due time).
	sqliteAdmit = "INSERT INTO jobs (" + heldColumns + ") SELECT " + heldColumns + " FROM queue_held " +
		"WHERE id = (SELECT id FROM queue_held WHERE limit_key = ? ORDER BY priority DESC, available_at, id LIMIT 1) " +
		"AND limit_max > (SELECT count(*) FROM jobs WHERE limit_key = ?)"
	sqliteAdmitted = "DELETE FROM queue_held WHERE limit_key = ? AND id IN (SELECT id FROM jobs WHERE limit_key = ?)"
	// PostgreSQL evaluates a volatile function of a statement's result
	// after its ORDER BY: these lock, and admit, the keys of a JSON array
	// in the database's order of them, the same in every transaction.
	pgAdmit   = "SELECT navree_admit(k, 0) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k"
	pgLockKey = "SELECT pg_advisory_xact_lock(hashtextextended('navree_limit:' || k, 0)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k"

	// routeOf reads what a retry of a failed job takes: its flow, or its
	// key.
	routeOf     = "SELECT coalesce(CAST(flow AS TEXT), ''), coalesce(limit_key, '') FROM failed_jobs WHERE id = ?"
	heldOfID    = "SELECT limit_key FROM queue_held WHERE id = ?"
	lookupHeld  = "SELECT " + columns + " FROM queue_held WHERE id = ?"
	heldErrors  = "SELECT errors FROM queue_held WHERE id = ?"
	cancelHeld  = failedInsert + "SELECT id, attempts, '" + driver.CancelledError + "', ?, errors, snoozes, " + settings + " FROM queue_held WHERE id = ?"
	heldDelete  = "DELETE FROM queue_held WHERE id = ?"
	retryHeldIn = "INSERT INTO queue_held " + retried + " FROM failed_jobs WHERE id IN LIST"
	keysOf      = "SELECT DISTINCT limit_key FROM failed_jobs WHERE id IN LIST"
	purgeKeys   = "SELECT limit_key FROM jobs WHERE queue = ? AND limit_key IS NOT NULL UNION SELECT limit_key FROM queue_held WHERE queue = ?"
	purgeHeld   = "DELETE FROM queue_held WHERE queue = ?"
	// The unique check of a limited job: the held jobs whose unique
	// window passed let their keys go, then the pending job holding the
	// key, in jobs or held.
	expireHeldUnique = "UPDATE queue_held SET unique_key = NULL WHERE unique_key = ? AND unique_until IS NOT NULL AND unique_until <= ?"
	findPending      = "SELECT id FROM jobs WHERE unique_key = ? UNION ALL SELECT id FROM queue_held WHERE unique_key = ? LIMIT 1"
)

// lockKeys takes the locks of keys, in order, on PostgreSQL, in one
// statement.
func lockKeys(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys []string) error {
	if !d.PG || len(keys) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, pgLockKey, sqlkit.List(sqlkit.Distinct(keys)))
	return err
}

// limitKeys are the keys of the limited jobs among jobs, and of those
// also unique their unique keys, marked by a line break (which no limit
// key holds): two dispatches of one unique key take turns, whatever
// their limit keys.
func limitKeys(jobs []*driver.Job) []string {
	var keys []string
	for _, j := range jobs {
		if j.LimitKey != "" {
			keys = append(keys, j.LimitKey)
			if j.UniqueKey != "" {
				keys = append(keys, "\n"+j.UniqueKey)
			}
		}
	}
	return keys
}

// insertLimitedUnique stores a job with a concurrency limit and a unique
// key in tx, as insertLimited does, unless a pending job holds its key:
// waiting, delayed or running in jobs, or held by its limit in
// queue_held (each checked after the keys whose window has passed let
// go). It returns that job's id then. Its keys are locked (limitKeys) by
// the caller, so no other dispatch of the key slips between the check and
// the insert; a held job that holds a key never meets another holder as
// it goes into jobs.
func (b *base) insertLimitedUnique(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job, now int64) (string, bool, error) {
	d := b.dialect()
	if _, err := tx.ExecContext(ctx, b.q.expireUnique, job.UniqueKey, now); err != nil {
		return "", false, err
	}
	if _, err := tx.ExecContext(ctx, d.Words(expireHeldUnique), job.UniqueKey, now); err != nil {
		return "", false, err
	}
	var id string
	switch err := tx.QueryRowContext(ctx, d.Words(findPending), job.UniqueKey, job.UniqueKey).Scan(&id); {
	case err == nil:
		return id, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", false, err
	}
	return job.ID, true, b.insertLimited(ctx, tx, uow, job)
}

// admit moves the next held jobs of each of keys into jobs while it has
// room: on PostgreSQL in one statement.
func admit(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys ...string) error {
	if d.PG {
		_, err := tx.ExecContext(ctx, pgAdmit, sqlkit.List(sqlkit.Distinct(keys)))
		return err
	}
	for _, key := range sqlkit.Distinct(keys) {
		for {
			res, err := tx.ExecContext(ctx, sqliteAdmit, key, key)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				break
			}
			if _, err := tx.ExecContext(ctx, sqliteAdmitted, key, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdAll stores limited jobs in tx, the transaction of uow (nil: of the
// driver's own), as a batch: held, in multi-row inserts, then each key
// admits what it has room for. Their keys are locked by the caller.
func (b *base) holdAll(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, jobs []*driver.Job) error {
	d := b.dialect()
	args := make([]any, 0, 21*min(len(jobs), rowsPerInsert))
	for chunk := range slices.Chunk(jobs, rowsPerInsert) {
		args = args[:0]
		rows := make([]string, len(chunk))
		for i, j := range chunk {
			args = appendRow(args, j, true)
			rows[i] = keyedValues
		}
		query := "INSERT INTO queue_held (" + columns + ") VALUES " + strings.Join(rows, ", ")
		// Built for its count of rows, as insertRows: not kept.
		if _, err := b.execIn(ctx, tx, uow, chunk, d.Render(query), args...); err != nil {
			return err
		}
	}
	keys := make([]string, len(jobs))
	for i, j := range jobs {
		keys[i] = j.LimitKey
	}
	return admit(ctx, tx, d, keys...)
}

// insertLimited stores a limited job in tx, the transaction of uow (nil:
// of the driver's own): in jobs when its key has room and none of its
// jobs is held, else held. Its key is locked (lockKeys) by the caller.
func (b *base) insertLimited(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job) error {
	d := b.dialect()
	var n, held int
	if err := tx.QueryRowContext(ctx, d.Words(limitRoom), job.LimitKey, job.LimitKey).Scan(&n, &held); err != nil {
		return err
	}
	if n < job.LimitMax && held == 0 {
		if err := b.placeAll(ctx, tx, []*driver.Job{job}); err != nil {
			return err
		}
		if _, err := b.execIn(ctx, tx, uow, []*driver.Job{job}, d.Words(limitInsert), appendRow(nil, job, true)...); err != nil {
			return err
		}
		return b.record(ctx, tx, []*driver.Job{job})
	}
	args := appendRow(nil, job, true) // held: it takes its place as it is let in
	if _, err := b.execIn(ctx, tx, uow, []*driver.Job{job}, d.Words(heldInsert), args...); err != nil {
		return err
	}
	if n < job.LimitMax { // room, and jobs held before it: the first of them go
		return admit(ctx, tx, d, job.LimitKey)
	}
	return nil
}

// cancelHeldJob moves the held job id to the failed jobs, cancelled at
// now, and reports whether there was one.
func cancelHeldJob(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, id string, now int64) (bool, error) {
	var key string
	switch err := tx.QueryRowContext(ctx, d.Q(heldOfID), id).Scan(&key); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	if err := lockKeys(ctx, tx, d, []string{key}); err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, d.Q(cancelHeld), now, id)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 { // admitted meanwhile
		return false, nil
	}
	_, err = tx.ExecContext(ctx, d.Q(heldDelete), id)
	return err == nil, err
}

// retryHeld moves the failed limited jobs ids back, held, available at
// now, and admits what their keys have room for.
func retryHeld(t *flowTx, ids []string, now int64) error {
	keys, err := t.strings(keysOf, sqlkit.List(ids))
	if err != nil {
		return err
	}
	if err := lockKeys(t.ctx, t.tx, t.d, keys); err != nil {
		return err
	}
	if _, err := t.exec(retryHeldIn, now, sqlkit.List(ids)); err != nil {
		return err
	}
	if _, err := t.exec(failedDel, sqlkit.List(ids)); err != nil {
		return err
	}
	return admit(t.ctx, t.tx, t.d, keys...)
}

// purge deletes the jobs of queue, held ones included, and returns how
// many, the locks of their keys taken first.
func (b *base) purge(ctx context.Context, queue string) (int, error) {
	d := b.dialect()
	var n int
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		if d.PG {
			keys, err := sqlkit.Texts(ctx, tx, d.Words(purgeKeys), queue, queue)
			if err != nil {
				return err
			}
			if err := lockKeys(ctx, tx, d, keys); err != nil {
				return err
			}
		}
		held, err := tx.ExecContext(ctx, d.Words(purgeHeld), queue)
		if err != nil {
			return err
		}
		jobs, err := tx.ExecContext(ctx, b.q.purge, queue)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, d.Words(purgeKept), queue); err != nil {
			return err
		}
		h, _ := held.RowsAffected()
		j, _ := jobs.RowsAffected()
		n = int(h + j)
		return nil
	})
	return n, err
}

// lookupHeldJob reads the held job id, with its errors; nil when there is
// none.
func (b *base) lookupHeldJob(ctx context.Context, id string) (*driver.Job, error) {
	rows, err := b.sqldb.QueryContext(ctx, b.d.Words(lookupHeld), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	j, err := scanJob(rows)
	if err != nil {
		return nil, err
	}
	rows.Close()
	j.Held = true
	j.Errors, err = b.errorsOf(ctx, b.d.Words(heldErrors), id)
	return j, err
}

// attemptKeys are the distinct keys of the limited jobs of done.
func attemptKeys(done []driver.Attempt) []string {
	var keys []string
	for _, a := range done {
		if a.Limit != "" && !slices.Contains(keys, a.Limit) {
			keys = append(keys, a.Limit)
		}
	}
	return keys
}

// completeLocked is Complete of jobs of several keys on PostgreSQL: the
// keys' locks first, in order, then the statement query, in one
// transaction (deadlocks are tried again, as inFlow does).
func (p *postgresDriver) completeLocked(ctx context.Context, done []driver.Attempt, query string, keys []string) ([]string, error) {
	batch, err := json.Marshal(done)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = p.inFlow(ctx, nil, func(t *flowTx) error {
		if err := lockKeys(ctx, t.tx, t.d, keys); err != nil {
			return err
		}
		ids, err = sqlkit.Texts(ctx, t.tx, query, string(batch))
		return err
	})
	return ids, err
}
