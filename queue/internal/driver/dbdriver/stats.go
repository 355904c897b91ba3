package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// The read side: what operators are shown of the queues (Stats) and of
// their jobs (Jobs), read without the write lock, from the indexes that
// serve the workers. Counting waiting and delayed jobs reads jobs_waiting
// and jobs_fair_due, the jobs without a fairness place and those with one
// (see halves; PostgreSQL from the indexes alone where the visibility map
// allows; SQLite looks each row up, taking a partial index on
// "reserved_at IS NULL" as not holding reserved_at); running ones,
// jobs_reserved and their rows; failed ones, failed_jobs_queue (queue,
// failed_at, id). A page of jobs walks the index of its state from the
// cursor:
//
//   - waiting and delayed: jobs_waiting and jobs_fair_due (queue,
//     available_at, id), a page of each merged (byDue), one queue at a
//     time; a page of every queue merges the first page of each
//     (PostgreSQL in one statement, SQLite in one per queue);
//   - running: jobs_reserved (reserved_at), then by id: SQLite's index
//     holds the id (the table has no rowid); PostgreSQL's does not, and
//     it reads the running jobs after the cursor and sorts them, work
//     bounded by the jobs running;
//   - failed: failed_jobs_failed_at (failed_at, id).
//
// A filter by queue or by job type that an index does not hold is checked
// on the rows the walk meets.

// readStatements are the statements of the read side in the words of one
// database.
type readStatements struct {
	stats string
	// queues lists the queues that have waiting or delayed jobs, by a
	// walk that jumps from one queue of jobs_waiting to the next.
	queues string
	pages  map[pageShape]string
	// everyQueue is the page of waiting or delayed jobs of every queue in
	// one statement (by whether it filters by type), "" where the
	// database has no LATERAL: the driver then merges pages of each queue.
	everyQueue [2]string
}

// pageShape names a statement of Jobs: the state it lists (waiting and
// delayed share theirs) and the filters it has.
type pageShape struct {
	state           driver.JobState
	byQueue, byName bool
}

// The columns of a JobInfo, from jobs and from failed_jobs.
const (
	noFinish             = ", CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT)"
	infoColumns          = "id, queue, name, attempts, max_attempts, available_at, reserved_at, reserved_by, created_at, CAST(NULL AS BIGINT), last_error, octet_length(payload)" + noFinish
	failedInfoColumns    = "id, queue, name, attempts, max_attempts, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS TEXT), created_at, failed_at, error, octet_length(payload)" + noFinish
	succeededInfoColumns = "id, queue, name, attempts, max_attempts, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), worker, created_at, CAST(NULL AS BIGINT), CAST(NULL AS TEXT), octet_length(payload), finished_at, run_ms, wait_ms"
)

// The bounds of ids, for a key before every job and after every job of a
// time.
const (
	firstID = "00000000-0000-0000-0000-000000000000"
	lastID  = "ffffffff-ffff-ffff-ffff-ffffffffffff"
)

// readStatementsOf builds the read statements: at is a time on the
// clock of reservations, words rewrites placeholders for the database,
// and lateral says whether it joins LATERAL.
func readStatementsOf(at string, words func(string) string, lateral bool) readStatements {
	stale := staleAt(at) // as TakeOver judges it
	// One row per queue and table: the queue, which counts (0: waiting
	// and delayed, 1: running and stale, 2: failed), two counts and a
	// time. The queues of waiting and of failed jobs are found by jumps
	// in their indexes; each count of them walks its index up to a limit
	// (the last argument of its subquery), so that a backlog of millions
	// costs what one of the limit does. Running jobs are counted in full:
	// there are no more than the workers' handlers, and the stale ones
	// they left.
	capped := func(from, where string) string {
		return "(SELECT count(*) FROM (SELECT 1 FROM " + from + " WHERE " + where + " LIMIT ?) AS c)"
	}
	// Waiting and delayed jobs are counted in each index, up to the limit
	// in each (the sum is capped by stats), and the oldest is the first of
	// both.
	waiting := func(half string) string {
		return "jobs.queue = queues.queue AND jobs.reserved_at IS NULL AND " + half + " AND jobs.available_at"
	}
	count := func(op string) string {
		return "(" + capped("jobs", waiting(halves[0])+op) + " + " + capped("jobs", waiting(halves[1])+op) + ")"
	}
	first := func(half string) string {
		return "(SELECT jobs.available_at FROM jobs WHERE jobs.queue = queues.queue AND jobs.reserved_at IS NULL AND " + half +
			" ORDER BY jobs.available_at LIMIT 1)"
	}
	r := readStatements{
		stats: words("WITH RECURSIVE " + queuesCTE + ", " + failedQueuesCTE + ", " + heldQueuesCTE +
			" SELECT queue, 0, " + count(" <= ?") + ", " + count(" > ?") +
			", (SELECT min(o.t) FROM (SELECT " + first(halves[0]) + " AS t UNION ALL SELECT " + first(halves[1]) + ") AS o)" +
			" FROM queues WHERE queue IS NOT NULL" +
			" UNION ALL SELECT queue, 1, count(*), count(*) FILTER (WHERE " + stale + "), 0 FROM jobs WHERE reserved_at IS NOT NULL GROUP BY queue" +
			" UNION ALL SELECT queue, 2, " + capped("failed_jobs", "failed_jobs.queue = failed_queues.queue") + ", 0, 0 FROM failed_queues WHERE queue IS NOT NULL" +
			" UNION ALL SELECT queue, 3, " + capped("queue_held", "queue_held.queue = held_queues.queue") + ", 0, 0 FROM held_queues WHERE queue IS NOT NULL"),
		queues: words("WITH RECURSIVE " + queuesCTE + " SELECT queue FROM queues WHERE queue IS NOT NULL"),
		pages:  map[pageShape]string{},
	}
	filters := func(byQueue, byName bool) string {
		var s string
		if byQueue {
			s += " AND queue = ?"
		}
		if byName {
			s += " AND name = ?"
		}
		return s
	}
	for _, byName := range []bool{false, true} {
		for _, byQueue := range []bool{false, true} {
			r.pages[pageShape{driver.Running, byQueue, byName}] = words("SELECT " + infoColumns + " FROM jobs " +
				"WHERE reserved_at IS NOT NULL AND (reserved_at, id) > (?, ?)" + filters(byQueue, byName) + " ORDER BY reserved_at, id LIMIT ?")
			r.pages[pageShape{driver.Failed, byQueue, byName}] = words("SELECT " + failedInfoColumns + " FROM failed_jobs " +
				"WHERE (failed_at, id) > (?, ?)" + filters(byQueue, byName) + " ORDER BY failed_at, id LIMIT ?")
			r.pages[pageShape{driver.Succeeded, byQueue, byName}] = words("SELECT " + succeededInfoColumns + " FROM succeeded_jobs " +
				"WHERE (finished_at, id) > (?, ?)" + filters(byQueue, byName) + " ORDER BY finished_at, id LIMIT ?")
		}
		// Waiting and delayed jobs of one queue: after the cursor, due by
		// a bound, from both indexes (see byDue).
		r.pages[pageShape{driver.Waiting, true, byName}] = words(byDue(infoColumns,
			"queue = ? AND reserved_at IS NULL AND HALF AND (available_at, id) > (?, ?) AND available_at <= ?"+filters(false, byName)))
		if lateral {
			// The first keys of each queue, read from the indexes alone;
			// then the rows of the first of them all, by primary key (not
			// by a join: see postgresStatements).
			r.everyQueue[b2i(byName)] = words("WITH RECURSIVE " + queuesCTE + " SELECT " + infoColumns + " FROM jobs WHERE id = ANY(ARRAY(" +
				"SELECT k.id FROM queues CROSS JOIN LATERAL (" + byDue("id, available_at",
				"queue = queues.queue AND reserved_at IS NULL AND HALF AND (available_at, id) > (?, ?) AND available_at <= ?"+filters(false, byName)) +
				") AS k ORDER BY k.available_at, k.id LIMIT ?))")
		}
	}
	return r
}

// halves are the tests of the two indexes of the waiting jobs by due
// time (migration 0022): those without a fairness place, jobs_waiting,
// and those with one, jobs_fair_due. A read of waiting jobs by due time
// reads both. The second names fair_key as jobs_fair_due's condition
// does, so that no search by place can take that index (see the
// migration).
var halves = [2]string{plan.Unkeyed, "fair_seq IS NOT NULL AND fair_key IS NOT NULL"}

// byDue is the first waiting jobs by due time of both indexes: the
// columns sel (available_at and id among them) of those that pass where,
// whose HALF is each index's test, up to a limit (?) in each, then the
// first by due time of both, up to a limit (?). Its arguments are where's
// and the limit, twice, then the limit.
func byDue(sel, where string) string {
	half := func(i int) string {
		return "SELECT * FROM (SELECT " + sel + " FROM jobs WHERE " + strings.Replace(where, "HALF", halves[i], 1) +
			" ORDER BY available_at, id LIMIT ?) AS h" + strconv.Itoa(i)
	}
	return half(0) + " UNION ALL " + half(1) + " ORDER BY available_at, id LIMIT ?"
}

// queuesCTE is the common table "queues": each queue of waiting jobs
// (of jobs_waiting or jobs_fair_due), found by a jump from the one
// before, so that listing them reads a few index pages per queue
// whatever their jobs (and a NULL last).
var queuesCTE = "queues(queue) AS (" +
	"SELECT min(f.q) FROM (" + nextQueue(halves[0], "") + " UNION ALL " + nextQueue(halves[1], "") + ") AS f " +
	"UNION ALL SELECT (SELECT min(n.q) FROM (" + nextQueue(halves[0], "queues.queue") + " UNION ALL " + nextQueue(halves[1], "queues.queue") + ") AS n) " +
	"FROM queues WHERE queues.queue IS NOT NULL)"

// nextQueue selects, as q, the first queue of the waiting jobs of half
// after after ("" for the first of all).
func nextQueue(half, after string) string {
	where := "j.reserved_at IS NULL AND " + half
	if after != "" {
		where += " AND j.queue > " + after
	}
	return "SELECT (SELECT j.queue FROM jobs AS j WHERE " + where + " ORDER BY j.queue LIMIT 1) AS q"
}

// failedQueuesCTE is the common table "failed_queues": each queue of
// failed_jobs_queue, found as queuesCTE finds those of jobs_waiting.
const failedQueuesCTE = "failed_queues(queue) AS (" +
	"SELECT q FROM (SELECT queue AS q FROM failed_jobs ORDER BY queue LIMIT 1) AS head " +
	"UNION ALL SELECT (SELECT f.queue FROM failed_jobs AS f WHERE f.queue > failed_queues.queue ORDER BY f.queue LIMIT 1) " +
	"FROM failed_queues WHERE failed_queues.queue IS NOT NULL)"

// heldQueuesCTE is the common table "held_queues": each queue of
// queue_held_queue, found as failedQueuesCTE finds those of failed_jobs.
var heldQueuesCTE = strings.NewReplacer("failed_queues", "held_queues", "failed_jobs", "queue_held").Replace(failedQueuesCTE)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The read statements of each database.
var (
	sqliteRead   = readStatementsOf("?", sqlkit.SQLite.Render, false)
	postgresRead = readStatementsOf(sqlkit.PgAt, sqlkit.Postgres.Render, true)
)

// Stats implements driver.Driver.
func (s *sqliteDriver) Stats(ctx context.Context, now, at int64, limit int) ([]driver.Stats, error) {
	return s.stats(ctx, nil, &sqliteRead, now, at, limit)
}

// Stats implements driver.Driver.
//
// It counts with JIT compilation off: the planner prices the capped
// counts for a hundred queues (its guess of what the jumps find), which
// passes jit_above_cost, and compiling the statement took 300 ms where
// running it takes 70 (docs/benchmarks.md).
func (p *postgresDriver) Stats(ctx context.Context, now, at int64, limit int) ([]driver.Stats, error) {
	tx, err := p.sqldb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL jit = off"); err != nil {
		return nil, err
	}
	return p.stats(ctx, tx, &postgresRead, now, at, limit)
}

// unknownOf is the statement of Unknown, list being the database's
// words for the values of a JSON array of text.
func unknownOf(list string, words func(string) string) string {
	return words("SELECT name, count(*) FROM (" + byDue("name, available_at, id", "queue = ? AND reserved_at IS NULL AND HALF") + ") AS w " +
		"WHERE name NOT IN (" + list + ") GROUP BY name")
}

// The statements of Unknown.
var (
	sqliteUnknown   = unknownOf("SELECT value FROM json_each(?)", sqlkit.SQLite.Render)
	postgresUnknown = unknownOf("SELECT jsonb_array_elements_text(CAST(? AS jsonb))", sqlkit.Postgres.Render)
)

// Unknown implements driver.Driver.
func (s *sqliteDriver) Unknown(ctx context.Context, queue string, known []string, limit int) (map[string]int, error) {
	return s.unknown(ctx, sqliteUnknown, queue, known, limit)
}

// Unknown implements driver.Driver.
func (p *postgresDriver) Unknown(ctx context.Context, queue string, known []string, limit int) (map[string]int, error) {
	return p.unknown(ctx, postgresUnknown, queue, known, limit)
}

func (b *base) unknown(ctx context.Context, query, queue string, known []string, limit int) (map[string]int, error) {
	list, err := json.Marshal(append([]string{}, known...)) // [] for none, not null
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	err = b.read(ctx, query, []any{queue, limit, queue, limit, limit, string(list)}, func(rows *sql.Rows) error {
		var name string
		var n int
		err := rows.Scan(&name, &n)
		out[name] = n
		return err
	})
	return out, err
}

// Jobs implements driver.Driver.
func (s *sqliteDriver) Jobs(ctx context.Context, q driver.JobsQuery) ([]driver.JobInfo, error) {
	return s.jobs(ctx, &sqliteRead, q)
}

// Jobs implements driver.Driver.
func (p *postgresDriver) Jobs(ctx context.Context, q driver.JobsQuery) ([]driver.JobInfo, error) {
	return p.jobs(ctx, &postgresRead, q)
}

// stats counts the jobs of every queue in one statement, so that a job
// moving between the tables meanwhile is counted once; in tx, when it is
// not nil.
func (b *base) stats(ctx context.Context, tx *sql.Tx, r *readStatements, now, at int64, limit int) ([]driver.Stats, error) {
	t, err := b.at(ctx, at)
	if err != nil {
		return nil, err
	}
	st, err := b.prepared(ctx, r.stats)
	if err != nil {
		return nil, err
	}
	if tx != nil {
		st = st.in(ctx, tx)
	}
	rows, err := st.QueryContext(ctx, append(append([]any{now, limit, now, limit, now, limit, now, limit}, atArgs(t)...), limit, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byQueue := map[string]*driver.Stats{}
	for rows.Next() {
		var queue string
		var kind, n, m, oldest int64
		if err := rows.Scan(&queue, &kind, &n, &m, &oldest); err != nil {
			// A value SQLite kept in a column of another type: read what
			// converts, as the worker does.
			var v [5]any
			if err := scanAny(rows, v[:]); err != nil {
				return nil, err
			}
			var rd reading
			queue, kind, n, m, oldest = rd.text("queue", v[0]), rd.int("kind", v[1]), rd.int("count", v[2]), rd.int("count", v[3]), rd.int("available_at", v[4])
		}
		s := byQueue[queue]
		if s == nil {
			s = &driver.Stats{Queue: queue}
			byQueue[queue] = s
		}
		switch kind {
		case 0: // each a sum of two counts, each up to the limit
			s.Waiting, s.Delayed = min(int(n), limit), min(int(m), limit)
			if n > 0 { // else the oldest is a delayed job's
				s.OldestAvailableAt = oldest
			}
		case 1:
			s.Running, s.Stale = int(n), int(m)
		case 2:
			s.Failed = int(n)
		case 3:
			s.Held = int(n)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]driver.Stats, 0, len(byQueue))
	for _, s := range byQueue {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b driver.Stats) int { return cmp.Compare(a.Queue, b.Queue) })
	return out, nil
}

// jobs lists a page of the jobs in q.State.
func (b *base) jobs(ctx context.Context, r *readStatements, q driver.JobsQuery) ([]driver.JobInfo, error) {
	after := q.After
	if after == (driver.JobKey{}) {
		after = driver.JobKey{At: math.MinInt64, ID: firstID}
	}
	var name []any // the argument of the filter by type, if any
	if q.Name != "" {
		name = []any{q.Name}
	}
	switch q.State {
	case driver.Running, driver.Failed, driver.Succeeded:
		args := []any{after.At, after.ID}
		if q.Queue != "" {
			args = append(args, q.Queue)
		}
		args = append(append(args, name...), q.Limit)
		return b.page(ctx, r.pages[pageShape{q.State, q.Queue != "", q.Name != ""}], args...)
	}
	// Waiting jobs are due by now; delayed ones after it, so their page
	// starts past every job due by now.
	upTo := q.Now
	if q.State == driver.Delayed {
		upTo = math.MaxInt64
		if due := (driver.JobKey{At: q.Now, ID: lastID}); after.Before(due) {
			after = due
		}
	}
	one := r.pages[pageShape{driver.Waiting, true, q.Name != ""}]
	queuePage := func(queue string) ([]driver.JobInfo, error) {
		half := append(append([]any{queue, after.At, after.ID, upTo}, name...), q.Limit)
		return b.page(ctx, one, append(append(half, half...), q.Limit)...)
	}
	if q.Queue != "" {
		return queuePage(q.Queue)
	}
	var out []driver.JobInfo
	if every := r.everyQueue[b2i(q.Name != "")]; every != "" {
		var err error
		half := append(append([]any{after.At, after.ID, upTo}, name...), q.Limit)
		if out, err = b.page(ctx, every, append(append(half, half...), q.Limit, q.Limit)...); err != nil {
			return nil, err
		}
	} else {
		queues, err := b.queues(ctx, r)
		if err != nil {
			return nil, err
		}
		for _, queue := range queues {
			page, err := queuePage(queue)
			if err != nil {
				return nil, err
			}
			out = append(out, page...)
		}
	}
	slices.SortFunc(out, func(a, b driver.JobInfo) int {
		return cmp.Or(cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), q.Limit)], nil
}

// queues lists the queues that have waiting or delayed jobs.
func (b *base) queues(ctx context.Context, r *readStatements) ([]string, error) {
	st, err := b.prepared(ctx, r.queues)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var queue string
		if err := rows.Scan(&queue); err != nil {
			return nil, err
		}
		out = append(out, queue)
	}
	return out, rows.Err()
}

// page runs a statement of Jobs and reads its rows.
func (b *base) page(ctx context.Context, query string, args ...any) ([]driver.JobInfo, error) {
	st, err := b.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.JobInfo
	for rows.Next() {
		j, err := scanInfo(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// scanInfo reads a row of infoColumns or failedInfoColumns. A value SQLite
// kept in a column of another type is read as readJob reads it: what does
// not convert is left zero, so that one row never fails a page.
func scanInfo(row scanner) (driver.JobInfo, error) {
	var j driver.JobInfo
	var availableAt, reservedAt, failedAt, size, finishedAt, runMs, waitMs sql.NullInt64
	var lastError, reservedBy sql.NullString
	err := row.Scan(&j.ID, &j.Queue, &j.Name, &j.Attempts, &j.MaxAttempts, &availableAt, &reservedAt, &reservedBy, &j.CreatedAt, &failedAt, &lastError, &size,
		&finishedAt, &runMs, &waitMs)
	if err == nil {
		j.AvailableAt, j.ReservedAt, j.ReservedBy, j.FailedAt, j.LastError, j.PayloadSize = availableAt.Int64, reservedAt.Int64, reservedBy.String, failedAt.Int64, lastError.String, int(size.Int64)
		j.FinishedAt, j.RunMs, j.WaitMs = finishedAt.Int64, runMs.Int64, waitMs.Int64
		return j, nil
	}
	var v [15]any
	if scanAny(row, v[:]) != nil {
		return j, err
	}
	var r reading
	return driver.JobInfo{
		ID: r.text("id", v[0]), Queue: r.text("queue", v[1]), Name: r.text("name", v[2]),
		Attempts: int(r.int("attempts", v[3])), MaxAttempts: int(r.int("max_attempts", v[4])),
		AvailableAt: r.nullInt("available_at", v[5]), ReservedAt: r.nullInt("reserved_at", v[6]), ReservedBy: r.nullText("reserved_by", v[7]),
		CreatedAt: r.int("created_at", v[8]), FailedAt: r.nullInt("failed_at", v[9]), LastError: r.nullText("error", v[10]), PayloadSize: int(r.nullInt("size", v[11])),
		FinishedAt: r.nullInt("finished_at", v[12]), RunMs: r.nullInt("run_ms", v[13]), WaitMs: r.nullInt("wait_ms", v[14]),
	}, nil
}
