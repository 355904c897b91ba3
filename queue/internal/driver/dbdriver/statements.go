package dbdriver

import (
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/control/unique"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// statements are the statements both drivers run, in the words of one
// database.
type statements struct {
	insert, expireUnique, insertUnique, findUnique string
	insertKeyed, insertUniqueKeyed                 string // insert's and insertUnique's of a keyed job
	takeOver, stale, unreserve                     string
	releaseKey, debounce                           string
	complete, release, snooze, interrupt           string
	failed, failedPayloads, flush, pending, purge  string

	insertFull string                 // the multi-row insert of a full chunk of jobs not keyed
	insertRows func(int, bool) string // the multi-row insert of n rows, keyed or not
}

const columns = "id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, rate_key, fair_key, fair_seq, controls"

// values are the placeholders of one inserted row of a job not keyed,
// keyedValues of a keyed one (see appendRow).
const (
	values      = "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, NULL, ?, ?, ?, 0, NULL, NULL, NULL, NULL, NULL)"
	keyedValues = "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, NULL, ?, ?, ?, 0, ?, ?, ?, ?, ?)"
)

// rowsPerInsert bounds a multi-row insert: 19 parameters a row stays
// under SQLite's 32,766 and PostgreSQL's 65,535.
const rowsPerInsert = 500

// The expressions that add a failed attempt (a JSON object, the
// argument) to a job's errors, in each database's words.
const (
	sqliteAppendError   = "json_insert(coalesce(errors, '[]'), '$[#]', json(?))"
	postgresAppendError = "(coalesce(errors, '[]')::jsonb || jsonb_build_array(?::jsonb))::text"
)

// sqliteStatements are the statements in SQLite's words.
func sqliteStatements() statements {
	return common("?", "", sqliteAppendError,
		"DELETE FROM jobs WHERE reserved_at IS NOT NULL AND (id, attempts) IN ("+
			"SELECT json_extract(value, '$.id'), json_extract(value, '$.attempt') FROM jsonb_each(?)) RETURNING id",
		sqlkit.SQLite.Render)
}

// postgresStatements are the statements in PostgreSQL's words: SKIP
// LOCKED, so that workers never wait for each other; the server's clock
// for a time of reservations passed as NULL; and a completion that
// commits without waiting for the disk (the setting lasts for its own
// transaction; lost in a crash of the server, the job runs again, as at
// least once allows, and a later commit that waits makes it durable, the
// log being written in order). Its reservations are package plan's.
//
// The completion finds its rows by id = ANY(...), on the primary key,
// not by a join: a vacuum of the empty table records "no rows", and
// until the next ANALYZE a join was planned as a walk over every row of
// jobs. Its coalesce keeps it off the index of reserved rows for the
// same reason.
func postgresStatements() statements {
	return common(sqlkit.PgAt, " FOR UPDATE SKIP LOCKED", postgresAppendError,
		"WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) "+
			"DELETE FROM jobs j USING lazy, jsonb_to_recordset($1::jsonb) AS d(id uuid, attempt int) "+
			"WHERE j.id = ANY(ARRAY(SELECT a.id FROM jsonb_to_recordset($1::jsonb) AS a(id uuid))) "+
			"AND j.id = d.id AND j.attempts = d.attempt AND coalesce(j.reserved_at, -1) <> -1 RETURNING j.id",
		sqlkit.Postgres.Render)
}

// staleAt is the rule of a reservation gone stale by the time at (see
// driver.IsStale), as takeovers, probes and Stats judge it; it holds
// staleAts placeholders, each for that time. Every stale reservation is at
// least YoungMs old: that bound lets the index over reserved rows narrow
// the search. A job held by a registered worker is stale when no row of a
// worker alive at at holds it; one held by none, by its age.
func staleAt(at string) string {
	return "reserved_at <= " + at + " - " + strconv.Itoa(driver.YoungMs) +
		" AND CASE WHEN reserved_by IS NULL THEN reserved_at + CASE WHEN timeout_ms = 0 THEN " + strconv.Itoa(driver.NoLimitStaleMs) +
		" ELSE timeout_ms + " + strconv.Itoa(driver.GraceMs) + " END <= " + at +
		" ELSE NOT EXISTS (SELECT 1 FROM queue_workers WHERE queue_workers.id = jobs.reserved_by AND queue_workers.heartbeat_at + queue_workers.rescue_ms > " + at + ") END"
}

// staleAts is how many placeholders staleAt holds.
const staleAts = 3

// atArgs is at, staleAts times.
func atArgs(at any) []any {
	args := make([]any, staleAts)
	for i := range args {
		args[i] = at
	}
	return args
}

// common builds the statements both databases share: at is a time on the
// clock of reservations, skipLocked what a takeover's search adds,
// appendError the expression that adds a failure to a job's errors, and
// words rewrites a statement's placeholders for the database.
func common(at, skipLocked, appendError, complete string, words func(string) string) statements {
	// The reservations of a queue gone stale by a time; its arguments are
	// queue and atArgs of that time.
	staleWhere := "queue = ? AND reserved_at IS NOT NULL AND " + staleAt(at)
	failedPage := " FROM failed_jobs WHERE (failed_at, id) > (?, ?) ORDER BY failed_at, id LIMIT ?" // by the index over (failed_at, id)
	q := statements{
		insert:       words("INSERT INTO jobs (" + columns + ") VALUES " + values),
		insertKeyed:  words("INSERT INTO jobs (" + columns + ") VALUES " + keyedValues),
		expireUnique: words(unique.Expire),
		insertUnique: words("INSERT INTO jobs (" + columns + ") VALUES " + values + " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"),
		insertUniqueKeyed: words("INSERT INTO jobs (" + columns + ") VALUES " + keyedValues +
			" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"),
		findUnique: words(unique.Find),
		releaseKey: words(unique.ReleaseKey),
		debounce:   words(unique.Debounced),
		takeOver: words("UPDATE jobs SET reserved_at = " + at + ", reserved_by = ?, attempts = attempts + 1 WHERE id = (" +
			"SELECT id FROM jobs WHERE " + staleWhere + " ORDER BY reserved_at, id LIMIT 1" + skipLocked + ") RETURNING " + columns),
		stale:     words("SELECT 1 FROM jobs WHERE " + staleWhere + " LIMIT 1"),
		unreserve: words("UPDATE jobs SET reserved_at = NULL, reserved_by = NULL, attempts = attempts - 1 WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL"),
		complete:  words(complete),
		snooze: words("UPDATE jobs SET reserved_at = NULL, reserved_by = NULL, attempts = attempts - 1, snoozes = snoozes + 1, available_at = ? " +
			"WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL"),
		release: words("UPDATE jobs SET reserved_at = NULL, reserved_by = NULL, available_at = ?, last_error = ?, errors = " + appendError +
			" WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL"),
		interrupt: words("UPDATE jobs SET reserved_at = NULL, reserved_by = NULL, attempts = attempts - 1, available_at = ?, errors = " + appendError +
			" WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL"),
		failed:         words("SELECT id, queue, name, '', " + failedRead + failedPage),
		failedPayloads: words("SELECT id, queue, name, payload, " + failedRead + failedPage),
		flush:          "DELETE FROM failed_jobs",
		pending:        words("SELECT (SELECT count(*) FROM jobs WHERE queue = ?) + (SELECT count(*) FROM queue_held WHERE queue = ?)"),
		purge:          words("DELETE FROM jobs WHERE queue = ?"),
		insertRows: func(n int, keyed bool) string {
			row := values
			if keyed {
				row = keyedValues
			}
			var b strings.Builder
			b.WriteString("INSERT INTO jobs (" + columns + ") VALUES ")
			for i := range n {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(row)
			}
			return words(b.String())
		},
	}
	q.insertFull = q.insertRows(rowsPerInsert, false)
	return q
}

// The statements that move a job between jobs and failed_jobs; SQLite
// runs the two halves in one transaction, PostgreSQL one statement. A job
// taken over after its last attempt counts the attempts it started, not
// the takeover's reservation.
const (
	// settings are the columns a job keeps, under the same names, as it
	// moves between jobs, failed_jobs and queue_held: what it was
	// dispatched with. A setting added to jobs that a failed job keeps
	// goes here, once, and every move carries it.
	settings = "queue, name, payload, max_attempts, backoff, timeout_ms, created_at, meta, flow, priority, limit_key, rate_key, fair_key, controls"
	// failedInsert is the start of every move into failed_jobs: each
	// selects, in this order, the id, the attempts it records, the error,
	// when it failed, its errors, its snoozes and its settings.
	failedInsert = "INSERT INTO failed_jobs (id, attempts, error, failed_at, errors, snoozes, " + settings + ") "
	// retried is what a retry moves a failed job back with, due at its
	// argument: its errors kept, its attempts and snoozes started over,
	// not unique; into jobs with retriedInto, or held by its limit.
	retried     = "(id, attempts, available_at, last_error, errors, snoozes, " + settings + ") SELECT id, 0, ?, error, errors, 0, " + settings
	retriedInto = "INSERT INTO jobs " + retried
)

// failedRead are the columns scanFailed reads after id, queue, name and
// payload.
const failedRead = "max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at, meta, priority, limit_key, rate_key, fair_key, snoozes, controls"
