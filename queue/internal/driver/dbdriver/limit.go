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
	pgLockKey   = "SELECT pg_advisory_xact_lock(hashtextextended('navree_limit:' || k, 0)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k"

	// routeOf reads what a retry of a failed job takes: its flow, or its
	// key.
	routeOf    = "SELECT coalesce(CAST(flow AS TEXT), ''), coalesce(limit_key, '') FROM failed_jobs WHERE id = ?"
	heldOfID   = "SELECT limit_key FROM queue_held WHERE id = ?"
	lookupHeld = "SELECT " + columns + " FROM queue_held WHERE id = ?"
	heldErrors = "SELECT errors FROM queue_held WHERE id = ?"
	cancelHeld = failedInsert + "SELECT id, attempts, '" + driver.CancelledError + "', ?, errors, snoozes, " + settings + " FROM queue_held WHERE id = ?"
	heldDelete = "DELETE FROM queue_held WHERE id = ?"
	// freedOfIDs and freedOfQueue read what deleting jobs frees (freedBy).
	freedOfIDs   = "SELECT limit_key, max(available_at) FROM jobs WHERE id IN LIST AND limit_key IS NOT NULL GROUP BY limit_key ORDER BY limit_key"
	freedOfQueue = "SELECT limit_key, max(available_at) FROM jobs WHERE queue = ? AND limit_key IS NOT NULL GROUP BY limit_key ORDER BY limit_key"
	retryHeldIn  = "INSERT INTO queue_held " + retried + " FROM failed_jobs WHERE id IN LIST"
	keysOf       = "SELECT DISTINCT limit_key FROM failed_jobs WHERE id IN LIST"
	purgeKeys    = "SELECT limit_key FROM jobs WHERE queue = ? AND limit_key IS NOT NULL UNION SELECT limit_key FROM queue_held WHERE queue = ?"
	purgeHeld    = "DELETE FROM queue_held WHERE queue = ?"
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

// freed is a key some of whose jobs left jobs in a transaction, with
// the latest due time among them: the key's next held jobs go in due no
// earlier (a worker's next search starts near that time).
type freed struct {
	Key string `json:"key"`
	Due int64  `json:"due"`
}

// freedAt are keys, each once, whose held jobs go in due no earlier than
// due: 0 for a dispatch or a retry, whose jobs keep their own times.
func freedAt(keys []string, due int64) []freed {
	out := make([]freed, 0, len(keys))
	for _, k := range sqlkit.Distinct(keys) {
		out = append(out, freed{Key: k, Due: due})
	}
	return out
}

// The admission moves a held job into jobs with every column of
// queue_held, from the one list (heldColumns), its due time raised to a
// floor: no trigger or function of the database repeats the list.
var (
	// sqliteAdmit moves, for each key of a JSON array of freed, the
	// next held job of the key into jobs if the key has room under its
	// limit, due no earlier than the key's due; sqliteAdmitted then
	// deletes those moved (a JSON array of ids) from queue_held. A key
	// with room for more is given another turn (admit): one statement a
	// batch of keys, where one a key cost SQLite a call of the driver
	// each.
	sqliteAdmit = "INSERT INTO jobs (" + heldColumns + ") SELECT " + dueNoEarlier("max(h.available_at, k.due)") +
		" FROM (SELECT json_extract(value, '$.key') AS key, json_extract(value, '$.due') AS due FROM json_each(?)) AS k " +
		"JOIN queue_held AS h ON h.id = (SELECT id FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id LIMIT 1) " +
		"WHERE h.limit_max > (SELECT count(*) FROM jobs WHERE limit_key = k.key) ORDER BY k.key" + enteredColumns
	sqliteAdmitted = "DELETE FROM queue_held WHERE id IN (SELECT value FROM json_each(?))"
	// pgAdmit moves, for each key of a JSON array of freed, the next held
	// jobs of the key into jobs, as many as it has room for under the
	// limit of the first of them, tells the queues that gained jobs, and
	// returns what moveIn reads of each.
	// The count sees the deletes of the statements before it in the
	// transaction (a trigger's statement would not see its own), and the
	// keys are locked first (lockKeys).
	pgAdmit = "WITH k AS (SELECT key, due FROM jsonb_to_recordset($1::jsonb) AS k(key text, due bigint)), " +
		"next AS (SELECT n.id, k.due FROM k CROSS JOIN LATERAL (SELECT id FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id " +
		"LIMIT greatest(0, (SELECT limit_max FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id LIMIT 1) " +
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

// admit moves the next held jobs of each key freed into jobs while it
// has room: on PostgreSQL in one statement. The keys are locked by the
// caller (lockKeys), before it deleted their jobs.
func admit(ctx context.Context, tx *sql.Tx, b *base, keys []freed) error {
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
		if _, err := b.execTx(ctx, tx, sqliteAdmitted, sqlkit.List(ids)); err != nil {
			return err
		}
		// The keys that let one in may have room for another.
		keys = slices.DeleteFunc(keys, func(k freed) bool {
			return !slices.ContainsFunc(moved, func(j *driver.Job) bool { return j.LimitKey == k.Key })
		})
	}
	return nil
}

// execTx runs query in tx, prepared once by b: SQLite would parse it anew
// at each call. (PostgreSQL's connections keep what they parsed.)
func (b *base) execTx(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if b.d.PG {
		return tx.ExecContext(ctx, query, args...)
	}
	st, err := b.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// queryTx is execTx's query.
func (b *base) queryTx(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if b.d.PG {
		return tx.QueryContext(ctx, query, args...)
	}
	st, err := b.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
}

// freedBy reads, in tx, the keys of the limited jobs that the statement
// query finds (their ids in a LIST, or a queue) with the latest due time
// of each: what their delete, after it, frees (admit). The caller locks
// the keys before the delete.
func freedBy(ctx context.Context, tx *sql.Tx, b *base, query string, args ...any) ([]freed, error) {
	rows, err := b.queryTx(ctx, tx, query, args...)
	var out []freed
	err = sqlkit.EachRow(rows, err, func(rows *sql.Rows) error {
		var f freed
		err := rows.Scan(&f.Key, &f.Due)
		out = append(out, f)
		return err
	})
	return out, err
}

// roomHeld lists the keys of held jobs that have room under the limit of
// their next held job: a skip over queue_held_next, one step a key, then
// each key's count.
const roomHeld = "WITH RECURSIVE k(key) AS (SELECT min(limit_key) FROM queue_held " +
	"UNION ALL SELECT (SELECT min(limit_key) FROM queue_held WHERE limit_key > k.key) FROM k WHERE k.key IS NOT NULL) " +
	"SELECT key FROM k WHERE key IS NOT NULL " +
	"AND (SELECT limit_max FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id LIMIT 1) > " +
	"(SELECT count(*) FROM jobs WHERE limit_key = k.key)"

// readmitKeys bounds the keys one transaction of Readmit locks: each is
// a lock PostgreSQL keeps in its shared table until the commit.
const readmitKeys = 100

// Readmit implements driver.Driver: the keys with room are found reading
// only, then let in under their locks, readmitKeys to a transaction.
func (b *base) Readmit(ctx context.Context, now int64) (int, error) {
	d := b.dialect()
	keys, err := sqlkit.Texts(ctx, b.sqldb, d.Words(roomHeld))
	if err != nil {
		return 0, err
	}
	for chunk := range slices.Chunk(keys, readmitKeys) {
		err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
			if err := lockKeys(ctx, tx, d, chunk); err != nil {
				return err
			}
			return admit(ctx, tx, b, freedAt(chunk, now))
		})
		if err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// freedKeys are the keys of freed.
func freedKeys(keys []freed) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Key
	}
	return out
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
	return admit(ctx, tx, b, freedAt(keys, 0))
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
		return admit(ctx, tx, b, freedAt([]string{job.LimitKey}, 0))
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
	return admit(t.ctx, t.tx, t.b, freedAt(keys, 0))
}

// purge deletes the jobs of queue, held ones included, and returns how
// many, the locks of their keys taken first; the held jobs of their keys
// in other queues are let in.
func (b *base) purge(ctx context.Context, queue string) (int, error) {
	d := b.dialect()
	var n int
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		if d.PG { // the held jobs' keys too
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
		h, _ := held.RowsAffected()
		// The held jobs of their keys in other queues are let in.
		return b.moveOut(ctx, tx, d.Words(freedOfQueue), queue, func() error {
			jobs, err := tx.ExecContext(ctx, b.q.purge, queue)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, d.Words(purgeKept), queue); err != nil {
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
	j.Errors, err = b.errorsOf(ctx, b.d.Words(heldErrors), id)
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
				query = pgKeep
			} else if _, err := t.b.execTx(t.ctx, t.tx, sqliteKeep, batch); err != nil {
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
