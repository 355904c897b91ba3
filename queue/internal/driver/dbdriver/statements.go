package dbdriver

import (
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// statements are the statements both drivers run, in the words of one
// database.
type statements struct {
	insert, expireUnique, insertUnique, findUnique string
	insertKeyed, insertUniqueKeyed                 string // insert's and insertUnique's of a keyed job
	reserve, takeOver, behind, stale, unreserve    string
	// reservePrioritized, reservePrioritizedRated and prioritizedArgs
	// are SQLite's, empty on PostgreSQL; there reserve, the search with
	// its LIMIT a parameter, is what reserveSized replaced, kept as the
	// reference of TestPostgreSQLKeepsOnePlanOfAReservation.
	reservePrioritized string
	// reserveSized and prioritizedSized, on PostgreSQL, are its
	// reservations by due time and by priority with their LIMIT written
	// in as a constant, a statement for each of the sizes of
	// reserveSizes (nil on SQLite), and sizedArgs their arguments: see
	// sizedReservation.
	reserveSized, prioritizedSized map[int]string
	sizedArgs                      func(at any, r driver.Reservation) []any
	// ratedSized and prioRatedSized are those leaving out the keys
	// whose window is full (see reserveRated), their times after the
	// arguments of sizedArgs at ratedSizedAt and prioRatedSizedAt.
	ratedSized, prioRatedSized     map[int]string
	ratedSizedAt, prioRatedSizedAt []int
	// The reservations of a queue where jobs with a rate limit may wait
	// (SQLite's; empty on PostgreSQL): reserve's and
	// reservePrioritized's, leaving out the keys whose window is full at
	// the time of the argument they take after each of their arguments
	// at the positions of ratedAt (and prioRatedAt).
	reserveRated, reservePrioritizedRated         string
	ratedAt, prioRatedAt                          []int
	releaseKey, debounce                          string
	complete, release, snooze, interrupt          string
	failed, failedPayloads, flush, pending, purge string

	// prioritizedArgs are the arguments of reservePrioritized, in its
	// order, for a reservation at at (reserve's are the same in both
	// databases: see reserveArgs).
	prioritizedArgs func(at any, r driver.Reservation) []any

	insertFull string                 // the multi-row insert of a full chunk of jobs not keyed
	insertRows func(int, bool) string // the multi-row insert of n rows, keyed or not
	words      func(string) string    // rewrites a statement's placeholders
}

const columns = "id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, fair_seq"

// values are the placeholders of one inserted row of a job not keyed,
// keyedValues of a keyed one (see appendRow).
const (
	values      = "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, NULL, ?, ?, ?, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
	keyedValues = "(?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, NULL, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)"
)

// rowsPerInsert bounds a multi-row insert: 21 parameters a row stays
// under SQLite's 32,766 and PostgreSQL's 65,535.
const rowsPerInsert = 500

// The expressions that add a failed attempt (a JSON object, the
// argument) to a job's errors, in each database's words.
const (
	sqliteAppendError   = "json_insert(coalesce(errors, '[]'), '$[#]', json(?))"
	postgresAppendError = "(coalesce(errors, '[]')::jsonb || jsonb_build_array(?::jsonb))::text"
)

// sqliteStatements are the statements in SQLite's words. Its planner,
// seeing an empty table's statistics, would take the jobs with a priority
// by jobs_waiting and sort them all: their searches name their index.
func sqliteStatements() statements {
	q := common("?", "", sqliteAppendError,
		"UPDATE jobs SET reserved_at = ?, reserved_by = ?, attempts = attempts + 1 WHERE id IN ("+
			"SELECT id FROM jobs WHERE "+doesAll+" AND queue = ? AND reserved_at IS NULL AND available_at >= ? AND available_at <= ? ORDER BY available_at, id LIMIT ?"+
			") RETURNING "+columns,
		"DELETE FROM jobs WHERE reserved_at IS NOT NULL AND (id, attempts) IN ("+
			"SELECT json_extract(value, '$.id'), json_extract(value, '$.attempt') FROM json_each(?)) RETURNING id",
		sqliteWords)
	byIndex := func(s string) string {
		return strings.Replace(s, "FROM jobs", "FROM jobs INDEXED BY jobs_prioritized", 1)
	}
	q.reservePrioritized = sqliteWords("UPDATE jobs SET reserved_at = ?, reserved_by = ?, attempts = attempts + 1 WHERE id IN (" +
		"SELECT id FROM (SELECT * FROM (" + byIndex(prioritized) + ") UNION ALL SELECT * FROM (" + unprioritized + ")) " +
		"ORDER BY priority DESC, available_at, id LIMIT ?) RETURNING " + columns)
	q.reservePrioritizedRated, q.prioRatedAt = ratedIn(q.reservePrioritized, "?")
	q.prioritizedArgs = func(at any, r driver.Reservation) []any {
		does := r.Does()
		return []any{at, nullable(r.By), r.Queue, does, r.Queue, r.Now, r.Limit, r.Queue, does, r.Queue, r.From, r.Now, r.Limit, r.Limit}
	}
	return q
}

// sqliteWords are SQLite's words for a statement: a LIMIT of a bound
// value as +?, an expression SQLite evaluates as the statement runs.
// Given a bare ?, SQLite plans for the value bound and prepares the
// statement again whenever another is bound (sqlite3ExprIsInteger): a
// reservation's limit, the free handlers, changes from one search to
// the next, and preparing the statement again cost it about a quarter
// of its time.
func sqliteWords(s string) string { return strings.ReplaceAll(s, "LIMIT ?", "LIMIT +?") }

// postgresStatements are the statements in PostgreSQL's words: SKIP
// LOCKED, so that workers never wait for each other; the server's clock
// for a time of reservations passed as NULL; and a reservation and a
// completion that commit without waiting for the disk (the setting lasts
// for their own transaction; lost in a crash of the server, either job
// runs again, as at least once allows, and a later commit that waits
// makes them durable, the log being written in order).
//
// Both find their rows by id = ANY(...), on the primary key, not by a
// join: a vacuum of the empty table records "no rows", and until the next
// ANALYZE a join was planned as a walk over every row of jobs. The
// completion's coalesce keeps it off the index of reserved rows for the
// same reason.
func postgresStatements() statements {
	reserve := "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) " +
		"UPDATE jobs SET reserved_at = " + pgAt + ", reserved_by = ?, attempts = jobs.attempts + 1 " +
		"FROM lazy WHERE jobs.id = ANY(ARRAY(" +
		"SELECT id FROM jobs WHERE " + doesAll + " AND queue = ? AND reserved_at IS NULL AND available_at >= ? AND available_at <= ? " +
		"ORDER BY available_at, id LIMIT ? FOR UPDATE SKIP LOCKED)) RETURNING " + prefixed("jobs.", columns)
	q := common(pgAt, " FOR UPDATE SKIP LOCKED", postgresAppendError, reserve,
		"WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) "+
			"DELETE FROM jobs j USING lazy, jsonb_to_recordset($1::jsonb) AS d(id uuid, attempt int) "+
			"WHERE j.id = ANY(ARRAY(SELECT a.id FROM jsonb_to_recordset($1::jsonb) AS a(id uuid))) "+
			"AND j.id = d.id AND j.attempts = d.attempt AND coalesce(j.reserved_at, -1) <> -1 RETURNING j.id",
		numbered)
	// On PostgreSQL the searches run in turn, each locking (SKIP LOCKED)
	// only what the ones before left of the limit: the jobs of priorities
	// above 0, then of 0, then below, so that it locks no job it does not
	// take.
	// byPriority is the statement with limit, a constant, as the limit
	// of the three searches.
	byPriority := func(limit string) string {
		above := strings.Replace(prioritized, "priority <> 0", "priority <> 0 AND priority > 0", 1)
		below := strings.Replace(strings.Replace(prioritized, "priority <> 0", "priority <> 0 AND priority < 0", 1),
			"LIMIT ?", "LIMIT ("+limit+" - (SELECT count(*) FROM p) - (SELECT count(*) FROM u))", 1)
		return "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)), " +
			"p AS (" + strings.Replace(above, "LIMIT ?", "LIMIT "+limit, 1) + " FOR UPDATE SKIP LOCKED), " +
			"u AS (" + strings.Replace(unprioritized, "LIMIT ?", "LIMIT ("+limit+" - (SELECT count(*) FROM p))", 1) + " FOR UPDATE SKIP LOCKED), " +
			"n AS (" + below + " FOR UPDATE SKIP LOCKED) " +
			"UPDATE jobs SET reserved_at = " + pgAt + ", reserved_by = ?, attempts = jobs.attempts + 1 " +
			"FROM lazy WHERE jobs.id = ANY(ARRAY(SELECT id FROM p UNION ALL SELECT id FROM u UNION ALL SELECT id FROM n)) " +
			"RETURNING " + prefixed("jobs.", columns)
	}
	q.reserveRated, q.ratedAt = "", nil // the sized ones replace it
	q.reserveSized, q.prioritizedSized = map[int]string{}, map[int]string{}
	q.ratedSized, q.prioRatedSized = map[int]string{}, map[int]string{}
	for _, n := range reserveSizes {
		plain, prio := strings.Replace(reserve, "LIMIT ?", "LIMIT "+strconv.Itoa(n), 1), byPriority(strconv.Itoa(n))
		q.reserveSized[n], q.prioritizedSized[n] = numbered(plain), numbered(prio)
		plain, q.ratedSizedAt = ratedIn(plain, pgAt)
		prio, q.prioRatedSizedAt = ratedIn(prio, pgAt)
		q.ratedSized[n], q.prioRatedSized[n] = numbered(plain), numbered(prio)
	}
	q.sizedArgs = func(at any, r driver.Reservation) []any {
		if !r.Prioritized {
			return []any{at, nullable(r.By), r.Queue, r.Does(), r.Queue, r.From, r.Now}
		}
		does := r.Does()
		return []any{r.Queue, does, r.Queue, r.Now, r.Queue, does, r.Queue, r.From, r.Now, r.Queue, does, r.Queue, r.Now, at, nullable(r.By)}
	}
	return q
}

// reserveSizes are the sizes of PostgreSQL's reservations (by due time
// and by priority), each a statement of its own with its LIMIT a
// constant: every count up to 16, the free handlers of a small worker,
// then powers of two.
//
// With LIMIT a parameter, the plan PostgreSQL keeps for a prepared
// statement must do for any limit, and it assumes a tenth of the rows:
// against the plan made for 4 jobs it looks dear, so the server plans
// the statement anew at every execution (plan_cache_mode auto), half of
// a reservation's time with a backlog, and more with each index a
// feature adds to jobs. With a constant it keeps one plan; a reservation
// of 37 runs the statements of 32 and 5 (sizedReservation).
var reserveSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 64, 128, 256, 512, 1024}

// sizedReservation is the size of the next statement of a reservation
// of limit jobs: the largest of reserveSizes not above it.
func sizedReservation(limit int) int {
	size := reserveSizes[0]
	for _, n := range reserveSizes {
		if n <= limit {
			size = n
		}
	}
	return size
}

// doesAll is the test that every search of a reservation starts with: no
// feature is recorded of its queue (queue_features) that the search does
// not do (see driver.Features). PostgreSQL and SQLite read it once a
// statement; their arguments are the queue and the features the search
// does.
const doesAll = "NOT EXISTS (SELECT 1 FROM queue_features WHERE queue = ? AND (feature & ?) = 0)"

// The two searches of a reservation by priority, each of up to its
// limit: the jobs with a priority (by the index jobs_prioritized, which
// holds only those), and the others from a bound (by jobs_waiting). The
// next jobs by priority, then due time, are the first of the two
// together. Their arguments are doesAll's, then queue, now, limit and
// queue, from, now, limit.
const (
	prioritized = "SELECT id, priority, available_at FROM jobs WHERE " + doesAll + " AND queue = ? AND reserved_at IS NULL AND priority <> 0 AND available_at <= ? " +
		"ORDER BY priority DESC, available_at, id LIMIT ?"
	unprioritized = "SELECT id, priority, available_at FROM jobs WHERE " + doesAll + " AND queue = ? AND reserved_at IS NULL AND priority = 0 AND available_at >= ? AND available_at <= ? " +
		"ORDER BY available_at, id LIMIT ?"
)

// reserveArgs are the arguments of a reservation at at, in the order of
// its statement: reserve's, or for r.Prioritized reservePrioritized's.
func (q *statements) reserveArgs(at any, r driver.Reservation) []any {
	if r.Prioritized {
		return q.prioritizedArgs(at, r)
	}
	return []any{at, nullable(r.By), r.Queue, r.Does(), r.Queue, r.From, r.Now, r.Limit}
}

// reserveRatedArgs is the statement and the arguments of a Rated
// reservation at at (on PostgreSQL nil for the server's clock), leaving
// out the keys whose window is full then.
func (q *statements) reserveRatedArgs(at any, r driver.Reservation) (string, []any) {
	stmt, slots := q.reserveRated, q.ratedAt
	if r.Prioritized {
		stmt, slots = q.reservePrioritizedRated, q.prioRatedAt
	}
	return stmt, withTimes(q.reserveArgs(at, r), slots, at)
}

// withTimes is args with at after each argument at the positions of
// slots (see ratedIn).
func withTimes(args []any, slots []int, at any) []any {
	out := make([]any, 0, len(args)+len(slots))
	for i, a := range args {
		out = append(out, a)
		if slices.Contains(slots, i) {
			out = append(out, at)
		}
	}
	return out
}

// ratedIn adds to each search of a reservation (each "available_at <= ?")
// the test that leaves out the jobs of keys whose window is full at at
// (an expression of one placeholder), and returns the positions of the
// arguments each test's time follows.
func ratedIn(reserve, at string) (string, []int) {
	const due = "available_at <= ?"
	test := " AND (rate_key IS NULL OR rate_key NOT IN (SELECT key FROM queue_rates WHERE reopen_at > " + at + "))"
	var b strings.Builder
	var slots []int
	n := 0
	for rest := reserve; rest != ""; {
		i := strings.IndexByte(rest, '?')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i+1])
		if strings.HasSuffix(rest[:i+1], due) {
			b.WriteString(test)
			slots = append(slots, n)
		}
		n++
		rest = rest[i+1:]
	}
	return b.String(), slots
}

// pgAt is a time on the clock of reservations on PostgreSQL: the
// argument, or for NULL the server's clock.
const pgAt = "coalesce(?::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint)"

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
func common(at, skipLocked, appendError, reserve, complete string, words func(string) string) statements {
	// The reservations of a queue gone stale by a time; its arguments are
	// queue and atArgs of that time.
	staleWhere := "queue = ? AND reserved_at IS NOT NULL AND " + staleAt(at)
	failedPage := " FROM failed_jobs WHERE (failed_at, id) > (?, ?) ORDER BY failed_at, id LIMIT ?" // by the index over (failed_at, id)
	q := statements{
		insert:       words("INSERT INTO jobs (" + columns + ") VALUES " + values),
		insertKeyed:  words("INSERT INTO jobs (" + columns + ") VALUES " + keyedValues),
		expireUnique: words("UPDATE jobs SET unique_key = NULL WHERE unique_key = ? AND unique_until IS NOT NULL AND unique_until <= ?"),
		insertUnique: words("INSERT INTO jobs (" + columns + ") VALUES " + values + " ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"),
		insertUniqueKeyed: words("INSERT INTO jobs (" + columns + ") VALUES " + keyedValues +
			" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"),
		findUnique: words("SELECT id FROM jobs WHERE unique_key = ? AND unique_key IS NOT NULL"),
		releaseKey: words("UPDATE jobs SET unique_key = NULL WHERE unique_key = ? AND reserved_at IS NOT NULL"),
		debounce: words("UPDATE jobs SET payload = ?, meta = ?, available_at = CASE WHEN ? < created_at + ? THEN ? ELSE created_at + ? END " +
			"WHERE unique_key = ? AND reserved_at IS NULL RETURNING id"),
		reserve: words(reserve),
		takeOver: words("UPDATE jobs SET reserved_at = " + at + ", reserved_by = ?, attempts = attempts + 1 WHERE id = (" +
			"SELECT id FROM jobs WHERE " + staleWhere + " ORDER BY reserved_at, id LIMIT 1" + skipLocked + ") RETURNING " + columns),
		behind:    words("SELECT 1 FROM jobs WHERE queue = ? AND reserved_at IS NULL AND available_at < ? AND available_at <= ? AND fair_seq IS NULL LIMIT 1"),
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
	q.reserveRated, q.ratedAt = ratedIn(reserve, at)
	q.reserveRated = words(q.reserveRated)
	q.words = words
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
	settings = "queue, name, payload, max_attempts, backoff, timeout_ms, created_at, meta, flow, priority, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key"
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
const failedRead = "max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at, meta, priority, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, snoozes"

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
