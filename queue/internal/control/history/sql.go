// Package history is the history of finished jobs, as the storage keeps
// it: the successes kept in succeeded_jobs (with queue.keep_succeeded),
// moved there by the completion's transaction, and the counts of
// attempts by queue and minute (throughput) and of their waits and runs
// (timings).
//
// It holds the statements of succeeded_jobs and of the counts, the
// writing of the counts (Add), the memory driver's counts and its form
// of a kept success (Memory, Succeeded), and the conformance tests of the
// history on the three drivers. The completion that moves a success is
// the storage core's (dbdriver/history.go's Complete, which runs Keep's
// statements); a failure's history travels in the job's errors.
package history

import (
	"context"
	"database/sql"

	"github.com/navree/navree/queue/internal/driver"
)

// Columns are the columns of succeeded_jobs, in the order the
// statements below write and read them.
const Columns = "id, queue, name, payload, max_attempts, attempts, created_at, finished_at, run_ms, wait_ms, worker, errors, meta, snoozes"

// The statements of succeeded_jobs. Those that keep successes, SQLiteKeep
// and PgKeep, are the completion's: on SQLite the copy runs before the
// completion's delete, in its transaction (WHERE true: an upsert after a
// join needs it); on PostgreSQL one statement deletes and inserts. A
// success whose id is kept already stays as it was. On PostgreSQL that
// is ON CONFLICT, which always checks by the primary key: a NOT EXISTS
// costs a third less a row, but its plan is the planner's, and one kept
// while succeeded_jobs looked empty walked the whole table at every
// completion (a completion of 4 jobs took 26 ms after 20,000 were kept).
const (
	SQLiteKeep = "INSERT INTO succeeded_jobs (" + Columns + ") " +
		"SELECT j.id, j.queue, j.name, j.payload, j.max_attempts, j.attempts, j.created_at, " +
		"coalesce(json_extract(d.value, '$.at'), 0), coalesce(json_extract(d.value, '$.ms'), 0), coalesce(json_extract(d.value, '$.wait'), 0), " +
		"j.reserved_by, j.errors, j.meta, j.snoozes FROM jsonb_each(?) AS d JOIN jobs AS j ON j.id = json_extract(d.value, '$.id') " +
		"AND j.attempts = json_extract(d.value, '$.attempt') AND j.reserved_at IS NOT NULL WHERE true ON CONFLICT (id) DO NOTHING"
	PgKeep = pgKeep + " ON CONFLICT (id) DO NOTHING) SELECT id FROM gone"
	pgKeep = "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)), " +
		"gone AS (DELETE FROM jobs j USING lazy, jsonb_to_recordset($1::jsonb) AS d(id uuid, attempt int, at bigint, ms bigint, wait bigint) " +
		"WHERE j.id = ANY(ARRAY(SELECT a.id FROM jsonb_to_recordset($1::jsonb) AS a(id uuid))) " +
		"AND j.id = d.id AND j.attempts = d.attempt AND coalesce(j.reserved_at, -1) <> -1 " +
		"RETURNING j.id, j.queue, j.name, j.payload, j.max_attempts, j.attempts, j.created_at, coalesce(d.at, 0) AS at, coalesce(d.ms, 0) AS ms, " +
		"coalesce(d.wait, 0) AS wait, j.reserved_by, j.errors, j.meta, j.snoozes), " +
		"kept AS (INSERT INTO succeeded_jobs (" + Columns + ") SELECT * FROM gone"
	// PgKeepFirst is PgKeep for successes none of which is kept already,
	// as every success is but one whose id comes back (by hand, or a
	// test's): a plain insert, which a speculative one (ON CONFLICT)
	// costs a third more. A conflict fails it whole, deleting nothing,
	// and the completion runs PgKeep.
	PgKeepFirst = pgKeep + ") SELECT id FROM gone"

	// Lookup reads a success kept.
	Lookup = "SELECT " + Columns + " FROM succeeded_jobs WHERE id = ?"
	// Purge deletes the successes kept of a queue (Purge, for
	// queue:bench): a walk of the table, which has no index by queue.
	Purge = "DELETE FROM succeeded_jobs WHERE queue = ?"
	// Prune deletes a batch of the oldest, found in
	// succeeded_jobs_finished_at.
	Prune = "DELETE FROM succeeded_jobs WHERE id IN (SELECT id FROM succeeded_jobs WHERE finished_at < ? ORDER BY finished_at, id LIMIT ?)"
)

// The statements of the counts (throughput and timings), in SQLite's
// words (the driver's dialect puts them in PostgreSQL's): a handful of
// rows a minute.
const (
	addCounts = "INSERT INTO queue_throughput (queue, minute, succeeded, released, failed) VALUES (?, ?, ?, ?, ?) " +
		"ON CONFLICT (queue, minute) DO UPDATE SET succeeded = queue_throughput.succeeded + excluded.succeeded, " +
		"released = queue_throughput.released + excluded.released, failed = queue_throughput.failed + excluded.failed"
	forgetCounts   = "DELETE FROM queue_throughput WHERE minute < ?"
	ReadThroughput = "SELECT queue, minute, succeeded, released, failed FROM queue_throughput WHERE minute >= ? ORDER BY queue, minute"

	addTiming = "INSERT INTO queue_timings (minute, queue, name, wait, bucket, count) VALUES (?, ?, ?, ?, ?, ?) " +
		"ON CONFLICT (minute, queue, name, wait, bucket) DO UPDATE SET count = queue_timings.count + excluded.count"
	forgetTimings = "DELETE FROM queue_timings WHERE minute < ?"
	// ReadTimings walks the primary key from a minute on; the queue and
	// the type are checked on the rows of the window (? = '' for every one).
	ReadTimings = "SELECT minute, queue, name, wait, bucket, count FROM queue_timings WHERE minute >= ? " +
		"AND (? = '' OR queue = ?) AND (? = '' OR name = ?) ORDER BY minute"
)

// Add adds counts and timings in tx, and forgets those of minutes
// before keepFrom; words puts the statements in the database's words.
func Add(ctx context.Context, tx *sql.Tx, counts []driver.Throughput, timings []driver.Timing, keepFrom int64, words func(string) string) error {
	for _, c := range counts {
		if _, err := tx.ExecContext(ctx, words(addCounts), c.Queue, c.Minute, c.Succeeded, c.Released, c.Failed); err != nil {
			return err
		}
	}
	if len(timings) > 0 {
		st, err := tx.PrepareContext(ctx, words(addTiming))
		if err != nil {
			return err
		}
		defer st.Close()
		for _, t := range timings {
			if _, err := st.ExecContext(ctx, t.Minute, t.Queue, t.Name, waitBit(t.Wait), t.Bucket, t.Count); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, words(forgetTimings), keepFrom); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, words(forgetCounts), keepFrom)
	return err
}

// waitBit is a timing's Wait as stored: 1 for a wait, 0 for a run.
func waitBit(wait bool) int {
	if wait {
		return 1
	}
	return 0
}
