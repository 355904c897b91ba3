package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/navree/navree/queue/internal/control/history"

	"github.com/navree/navree/queue/internal/control/limit"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Concurrency limits (see driver.Job.LimitKey). A limited job is stored
// in jobs while its key has room, else held in queue_held. Every
// transaction that moves a limited job out of jobs (moveOut: a
// completion, a failure, a cancel, a purge, a flow's cancel) lets the
// next held jobs of its key in after the move (admit), and the upkeep UpkeepHeld does
// it for a key left with room (a worker of an older build, through a
// rolling deploy, completes without it; migration 0021 dropped the
// trigger jobs_admit that did it before). The rest is here too: hold at
// dispatch and at retry, cancel and look up held jobs, count them.
//
// On PostgreSQL every transaction that counts the jobs of a key takes
// the key's lock first (an advisory lock, held to its commit: limit.Lock),
// so that two of them never fill one slot; one that stores or deletes the
// jobs of several keys takes their locks first, in one statement, in the
// database's order of them, so that two such transactions never wait for
// each other (a deadlock). On SQLite every write transaction holds the
// file's write lock.

// The statements of limits, in SQLite's words with LIST for a list of ids.
const (
	heldColumns = columns + ", errors"
	limitInsert = "INSERT INTO jobs (" + columns + ") VALUES " + keyedValues
	heldInsert  = "INSERT INTO queue_held (" + columns + ") VALUES " + keyedValues

	// routeOf reads what a retry of a failed job takes: its flow, or its
	// key.
	routeOf     = "SELECT coalesce(CAST(flow AS TEXT), ''), coalesce(limit_key, '') FROM failed_jobs WHERE id = ?"
	lookupHeld  = "SELECT " + columns + " FROM queue_held WHERE id = ?"
	cancelHeld  = failedInsert + "SELECT id, attempts, '" + driver.CancelledError + "', ?, errors, snoozes, " + settings + " FROM queue_held WHERE id = ?"
	retryHeldIn = "INSERT INTO queue_held " + retried + " FROM failed_jobs WHERE id IN LIST"
)

// insertLimitedUnique stores a job with a concurrency limit and a unique
// key in tx, as insertLimited does, unless a pending job holds its key:
// waiting, delayed or running in jobs, or held by its limit in
// queue_held (each checked after the keys whose window has passed let
// go). It returns that job's id then. Its keys are locked (limit.Keys) by
// the caller, so no other dispatch of the key slips between the check and
// the insert; a held job that holds a key never meets another holder as
// it goes into jobs.
func (b *base) insertLimitedUnique(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job, now int64) (string, bool, error) {
	d := b.dialect()
	if _, err := tx.ExecContext(ctx, b.q.expireUnique, job.UniqueKey, now); err != nil {
		return "", false, err
	}
	if _, err := tx.ExecContext(ctx, d.Words(limit.ExpireHeldUnique), job.UniqueKey, now); err != nil {
		return "", false, err
	}
	var id string
	switch err := tx.QueryRowContext(ctx, d.Words(limit.FindPending), job.UniqueKey, job.UniqueKey).Scan(&id); {
	case err == nil:
		return id, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", false, err
	}
	return job.ID, true, b.insertLimited(ctx, tx, uow, job)
}

// The admission moves a held job into jobs with every column of
// queue_held, from the one list (heldColumns), its due time raised to a
// floor: no trigger or function of the database repeats the list.
var (
	// sqliteAdmit moves, for each key of a JSON array of limit.Freed, the
	// next held job of the key into jobs if the key has room under its
	// limit, due no earlier than the key's due; limit.SQLiteAdmitted
	// then deletes those moved from queue_held. A key with room for more
	// is given another turn (admit): one statement a batch of keys, where
	// one a key cost SQLite a call of the driver each.
	sqliteAdmit = "INSERT INTO jobs (" + heldColumns + ") SELECT " + dueNoEarlier("max(h.available_at, k.due)") +
		" FROM (SELECT json_extract(value, '$.key') AS key, json_extract(value, '$.due') AS due FROM jsonb_each(?)) AS k " +
		"JOIN queue_held AS h ON h.id = (SELECT id FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id LIMIT 1) " +
		"WHERE " + sqlkit.SQLite.Setting("h", "limit_max") + " > (SELECT count(*) FROM jobs WHERE limit_key = k.key) ORDER BY k.key" + enteredColumns
	// pgAdmit moves, for each key of a JSON array of limit.Freed, the next held
	// jobs of the key into jobs, as many as it has room for under the
	// limit of the first of them, tells the queues that gained jobs, and
	// returns what moveIn reads of each.
	// The count sees the deletes of the statements before it in the
	// transaction (a trigger's statement would not see its own), and the
	// keys are locked first (limit.Lock).
	pgAdmit = "WITH k AS (SELECT key, due FROM jsonb_to_recordset($1::jsonb) AS k(key text, due bigint)), " +
		"next AS (SELECT n.id, k.due FROM k CROSS JOIN LATERAL (SELECT id FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id " +
		"LIMIT greatest(0, (SELECT " + sqlkit.Postgres.Setting("queue_held", "limit_max") + " FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id LIMIT 1) " +
		"- (SELECT count(*) FROM jobs WHERE limit_key = k.key))) AS n), " +
		"moved AS (DELETE FROM queue_held h USING next WHERE h.id = next.id RETURNING h.*, next.due), " +
		"admitted AS (INSERT INTO jobs (" + heldColumns + ") SELECT " + dueNoEarlier("greatest(available_at, due)") + " FROM moved RETURNING *) " +
		"SELECT id, queue, coalesce(fair_key, ''), priority, coalesce(rate_key, ''), coalesce(limit_key, '') FROM admitted " +
		"WHERE (SELECT count(pg_notify('" + Channel + "', q)) FROM (SELECT DISTINCT queue AS q FROM admitted) AS a) >= 0"
)

// dueNoEarlier is heldColumns with available_at read as floor.
func dueNoEarlier(floor string) string {
	return strings.Replace(heldColumns, "available_at", floor, 1)
}

// admit moves the next held jobs of each key limit.Freed into jobs while it
// has room: on PostgreSQL in one statement. The keys are locked by the
// caller (limit.Lock), before it deleted their jobs.
func admit(ctx context.Context, tx *sql.Tx, b *base, keys []limit.Freed) error {
	if len(keys) == 0 {
		return nil
	}
	if b.d.PG {
		batch, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		_, err = b.moveIn(ctx, tx, pgAdmit, string(batch))
		return err
	}
	for len(keys) > 0 {
		batch, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		moved, err := b.moveIn(ctx, tx, sqliteAdmit, string(batch))
		if err != nil || len(moved) == 0 {
			return err
		}
		ids := make([]string, len(moved))
		for i, j := range moved {
			ids[i] = j.ID
		}
		if _, err := b.execTx(ctx, tx, limit.SQLiteAdmitted, sqlkit.List(ids)); err != nil {
			return err
		}
		// The keys that let one in may have room for another.
		keys = slices.DeleteFunc(keys, func(k limit.Freed) bool {
			return !slices.ContainsFunc(moved, func(j *driver.Job) bool { return j.LimitKey == k.Key })
		})
	}
	return nil
}

// execTx runs query in tx, prepared once by b (see stmt).
func (b *base) execTx(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := b.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.in(ctx, tx).ExecContext(ctx, args...)
}

// queryTx is execTx's query.
func (b *base) queryTx(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := b.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.in(ctx, tx).QueryContext(ctx, args...)
}

// freedBy reads, in tx, the keys of the limited jobs that the statement
// query finds (their ids in a LIST, or a queue) with the latest due time
// of each: what their delete, after it, frees (admit). The caller locks
// the keys before the delete.
func freedBy(ctx context.Context, tx *sql.Tx, b *base, query string, args ...any) ([]limit.Freed, error) {
	rows, err := b.queryTx(ctx, tx, query, args...)
	var out []limit.Freed
	err = sqlkit.EachRow(rows, err, func(rows *sql.Rows) error {
		var f limit.Freed
		err := rows.Scan(&f.Key, &f.Due)
		out = append(out, f)
		return err
	})
	return out, err
}

// readmit is driver.UpkeepHeld: the keys with room are found reading
// only, then let in under their locks, limit.ReadmitKeys to a transaction.
func (b *base) readmit(ctx context.Context, now int64) (int, error) {
	d := b.dialect()
	keys, err := sqlkit.Texts(ctx, b.sqldb, d.Words(limit.RoomHeld(d)))
	if err != nil {
		return 0, err
	}
	for chunk := range slices.Chunk(keys, limit.ReadmitKeys) {
		err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
			if err := limit.Lock(ctx, tx, d, chunk); err != nil {
				return err
			}
			return admit(ctx, tx, b, limit.FreedAt(chunk, now))
		})
		if err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// holdAll stores limited jobs in tx, the transaction of uow (nil: of the
// driver's own), as a batch: held, in multi-row inserts, then each key
// admits what it has room for. Their keys are locked by the caller.
func (b *base) holdAll(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, jobs []*driver.Job) error {
	d := b.dialect()
	args := make([]any, 0, 19*min(len(jobs), rowsPerInsert))
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
	return admit(ctx, tx, b, limit.FreedAt(keys, 0))
}

// insertLimited stores a limited job in tx, the transaction of uow (nil:
// of the driver's own): in jobs when its key has room and none of its
// jobs is held, else held. Its key is locked (limit.Lock) by the caller.
func (b *base) insertLimited(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job) error {
	d := b.dialect()
	var n, held int
	if err := tx.QueryRowContext(ctx, d.Words(limit.Room), job.LimitKey, job.LimitKey).Scan(&n, &held); err != nil {
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
		return admit(ctx, tx, b, limit.FreedAt([]string{job.LimitKey}, 0))
	}
	return nil
}

// cancelHeldJob moves the held job id to the failed jobs, cancelled at
// now, and reports whether there was one.
func cancelHeldJob(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, id string, now int64) (bool, error) {
	var key string
	switch err := tx.QueryRowContext(ctx, d.Q(limit.KeyOfHeld), id).Scan(&key); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	if err := limit.Lock(ctx, tx, d, []string{key}); err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, d.Q(cancelHeld), now, id)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 { // admitted meanwhile
		return false, nil
	}
	_, err = tx.ExecContext(ctx, d.Q(limit.HeldDelete), id)
	return err == nil, err
}

// retryHeld moves the failed limited jobs ids back, held, available at
// now, and admits what their keys have room for.
func retryHeld(t *flowTx, ids []string, now int64) error {
	keys, err := t.strings(limit.KeysOfFailed, sqlkit.List(ids))
	if err != nil {
		return err
	}
	if err := limit.Lock(t.ctx, t.tx, t.d, keys); err != nil {
		return err
	}
	if _, err := t.exec(retryHeldIn, now, sqlkit.List(ids)); err != nil {
		return err
	}
	if _, err := t.exec(failedDel, sqlkit.List(ids)); err != nil {
		return err
	}
	return admit(t.ctx, t.tx, t.b, limit.FreedAt(keys, 0))
}

// purge deletes the jobs of queue, held ones included, and returns how
// many, the locks of their keys taken first; the held jobs of their keys
// in other queues are let in.
func (b *base) purge(ctx context.Context, queue string) (int, error) {
	d := b.dialect()
	var n int
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		if d.PG { // the held jobs' keys too
			keys, err := sqlkit.Texts(ctx, tx, d.Words(limit.PurgeKeys), queue, queue)
			if err != nil {
				return err
			}
			if err := limit.Lock(ctx, tx, d, keys); err != nil {
				return err
			}
		}
		held, err := tx.ExecContext(ctx, d.Words(limit.PurgeHeld), queue)
		if err != nil {
			return err
		}
		h, _ := held.RowsAffected()
		// The held jobs of their keys in other queues are let in.
		return b.moveOut(ctx, tx, d.Words(limit.FreedOfQueue), queue, func() error {
			jobs, err := tx.ExecContext(ctx, b.q.purge, queue)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, d.Words(history.Purge), queue); err != nil {
				return err
			}
			j, _ := jobs.RowsAffected()
			n = int(h + j)
			return nil
		})
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
	j.Errors, err = b.errorsOf(ctx, b.d.Words(limit.HeldErrors), id)
	return j, err
}

// anyLimited reports whether a job of done is limited.
func anyLimited(done []driver.Attempt) bool {
	return slices.ContainsFunc(done, func(a driver.Attempt) bool { return a.Limit != "" })
}

// limitedIDs are the ids of the limited jobs of done.
func limitedIDs(done []driver.Attempt) []string {
	var ids []string
	for _, a := range done {
		if a.Limit != "" {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// completeIn deletes the jobs of done that succeeded (kept with keep) in
// one transaction (deadlocks are tried again, as inFlow does), then runs
// then, if set, in it: Complete of a batch that holds limited jobs, and
// Finish.
func (b *base) completeIn(ctx context.Context, done []driver.Attempt, keep bool, then func(t *flowTx, ids []string) error) ([]string, error) {
	batch, err := json.Marshal(done)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = b.inFlow(ctx, nil, func(t *flowTx) error {
		var err error
		if ids, err = t.complete(done, string(batch), keep); err != nil || then == nil {
			return err
		}
		return then(t, ids)
	})
	return ids, err
}

// complete deletes, in t, the jobs of done (batch, as JSON) that
// succeeded, or keeps them with keep, and returns their ids. The keys of
// the limited ones are locked first, and their next held jobs let in
// after (moveOut).
func (t *flowTx) complete(done []driver.Attempt, batch string, keep bool) ([]string, error) {
	var ids []string
	which, arg := byIDs(t.d, true, limitedIDs(done)...)
	err := t.b.moveOut(t.ctx, t.tx, which, arg, func() error {
		query := t.b.q.complete
		if keep {
			if t.d.PG {
				query = history.PgKeep
			} else if _, err := t.b.execTx(t.ctx, t.tx, history.SQLiteKeep, batch); err != nil {
				return err
			}
		}
		rows, err := t.b.queryTx(t.ctx, t.tx, query, batch)
		return sqlkit.EachRow(rows, err, func(rows *sql.Rows) error {
			var id string
			err := rows.Scan(&id)
			ids = append(ids, id)
			return err
		})
	})
	return ids, err
}
