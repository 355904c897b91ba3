package dbdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// TestReservationUsesTheWaitingIndex: without the partial index over
// waiting rows, reservation scans every row (about 12 jobs/s on a large
// table, measured); takeovers and their probes search the index over
// reserved rows, and each holder's row in the registry by its key.
func TestReservationUsesTheWaitingIndex(t *testing.T) {
	t.Parallel()
	d := migrated(t, dbtest.SQLiteURL(t))
	s := newSQLite(d)
	q := s.q
	reserve := func(r driver.Reservation) string {
		stmt, _ := statementOf(s.base, 1, r, 0)
		return stmt
	}
	args := func(r driver.Reservation) []any {
		_, args := statementOf(s.base, 1, r, 0)
		return args
	}
	plain, byPriority := driver.Reservation{Queue: "default", Now: 1, Limit: 10}, driver.Reservation{Features: driver.FeaturePriority, Queue: "default", Now: 1, Limit: 10}
	for _, c := range []struct {
		name, stmt string
		args       []any
		want       []string
	}{
		{"reserve", reserve(plain), args(plain), []string{"USING INDEX jobs_waiting"}},
		{"reserve by priority", reserve(byPriority), args(byPriority),
			[]string{"USING INDEX jobs_waiting", "USING INDEX jobs_prioritized"}},
		{"find unique", q.findUnique, []any{"k"}, []string{"INDEX jobs_unique_key"}},
		{"take over", q.takeOver, []any{1, nil, "default", 1, 1, 1}, []string{"INDEX jobs_reserved", "SEARCH queue_workers USING INDEX sqlite_autoindex_queue_workers_1 (id=?)"}},
		{"stale", q.stale, []any{"default", 1, 1, 1}, []string{"INDEX jobs_reserved", "SEARCH queue_workers USING INDEX sqlite_autoindex_queue_workers_1 (id=?)"}},
	} {
		joined := sqlitePlan(t, d, c.stmt, c.args...)
		for _, want := range c.want {
			if !strings.Contains(joined, want) || strings.Contains(joined, "SCAN jobs") || strings.Contains(joined, "SCAN queue_workers") {
				t.Errorf("%s plan: %s; want it %s and no scan", c.name, joined, want)
			}
		}
	}
}

// explained runs an EXPLAIN query on q and returns its plan, a line a
// row.
func explained(t *testing.T, q sqlkit.Querier, query string, args ...any) string {
	t.Helper()
	lines, err := sqlkit.Texts(context.Background(), q, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n") + "\n"
}

// unvacuumed returns a migrated PostgreSQL database whose jobs table no
// autovacuum cleans up (or analyzes) behind the test's back.
func unvacuumed(t *testing.T) *db.DB {
	t.Helper()
	ctx := context.Background()
	d := migrated(t, dbtest.PostgresURL(t))
	if _, err := d.ExecContext(ctx, "ALTER TABLE jobs SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNoSearchByPlaceCanTakeTheIndexByDueTime: on PostgreSQL a fair
// reservation's search of the keyed jobs by place must read jobs_fair in
// its order. With the statistics a vacuum of an emptied table leaves,
// PostgreSQL took jobs_fair_due (the same jobs by due time) and sorted
// every keyed job of the queue at each reservation: 14 ms for 20,000, and
// queue:bench worked a fair queue at 330 jobs/s where it works 5,700.
// Which plan the statistics lead to varies with the indexes' bloat, so
// the test holds the mechanism: jobs_fair_due's condition names
// fair_key, which no search by place names, so that even without
// jobs_fair (dropped in the test's transaction) the search cannot take it.
func TestNoSearchByPlaceCanTakeTheIndexByDueTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := migrated(t, dbtest.PostgresURL(t))
	drv := newPostgres(d)
	tx, err := d.DB.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DROP INDEX jobs_fair"); err != nil {
		t.Fatal(err)
	}
	for _, features := range []driver.Features{driver.FeatureFair, driver.FeatureFair | driver.FeaturePriority, driver.FeatureFair | driver.FeatureRate} {
		for _, size := range []int{16, 0} {
			stmt, args := statementOf(drv.base, int64(1000), driver.Reservation{Features: features, Queue: "default", Now: 1000, Limit: 100}, size)
			if plan := explained(t, tx, "EXPLAIN "+stmt, args...); strings.Contains(plan, "jobs_fair_due") {
				t.Errorf("features %b, size %d: a search takes jobs_fair_due:\n%s", features, size, plan)
			}
		}
	}
}

// TestReservationStartsPastReservedRows: on PostgreSQL the rows a worker
// reserved and deleted leave entries in the waiting index until a vacuum
// (on a busy queue, or where autovacuum is off, hundreds of thousands). A
// search from the worker's cursor skips them; a full search reads them
// all. Measured in buffers read, which do not depend on the machine.
func TestReservationStartsPastReservedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := unvacuumed(t)
	drv := newPostgres(d)
	// 20,000 jobs at 1..20,000 ms, reserved and completed in batches, as a
	// worker would; then one new job.
	const n = 20_000
	if _, err := d.ExecContext(ctx, "INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, created_at) "+
		"SELECT gen_random_uuid(), 'default', 'x', '{}', 1, 'fixed:0', 0, 0, i, i FROM generate_series(1, ?) AS i", n); err != nil {
		t.Fatal(err)
	}
	var cursor int64
	for {
		jobs, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: n, At: n, From: max(cursor-1000, 0), Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		done := make([]driver.Attempt, len(jobs))
		for i, j := range jobs {
			done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts}
			cursor = max(cursor, j.AvailableAt)
		}
		if _, err := drv.Complete(ctx, done, false); err != nil {
			t.Fatal(err)
		}
	}
	if cursor != n {
		t.Fatalf("the cursor search stopped at %d of %d jobs", cursor, n)
	}
	if _, err := d.ExecContext(ctx, "INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, created_at) "+
		"VALUES (gen_random_uuid(), 'default', 'x', '{}', 1, 'fixed:0', 0, 0, ?, ?)", n+1, n+1); err != nil {
		t.Fatal(err)
	}
	buffers := func(from int64) int {
		// The reservation's own search, run and rolled back.
		tx, err := d.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		plan := explained(t, tx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) SELECT id FROM jobs WHERE queue = 'default' AND reserved_at IS NULL AND fair_seq IS NULL "+
			"AND available_at >= ? AND available_at <= ? ORDER BY available_at, id LIMIT 100 FOR UPDATE SKIP LOCKED", from, n+1)
		m := regexp.MustCompile(`Index Scan using jobs_waiting[\s\S]*?Buffers: shared hit=(\d+)`).FindStringSubmatch(plan)
		if m == nil {
			t.Fatalf("no index scan of jobs_waiting in\n%s", plan)
		}
		hit, _ := strconv.Atoi(m[1])
		return hit
	}
	// A ratio, not a count: other packages' tests share the server, and
	// the pages a search reads move with what they leave (126 against 9
	// here on a quiet server).
	full, fromCursor := buffers(0), buffers(cursor-1000)
	if full < 5*fromCursor {
		t.Fatalf("the search read %d index and table pages from the cursor and %d from the start; want the cursor's a fifth at most", fromCursor, full)
	}
	t.Logf("pages read: %d from the start, %d from the cursor", full, fromCursor)
	jobs, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: n + 1, At: n + 1, From: cursor - 1000, Limit: 10})
	if err != nil || len(jobs) != 1 || jobs[0].AvailableAt != n+1 {
		t.Fatalf("the new job from the cursor: %v, %v", jobs, err)
	}
}

// TestPlansHoldWhenStatisticsSayEmpty: a vacuum of the jobs table while it
// is empty records "no rows" in PostgreSQL's statistics, and the next jobs
// arrive before an ANALYZE. Reservations and completions must still go to
// their rows through the primary key, not walk the table: with the join
// they used to be planned with, each read every row (a second apiece with
// 100k jobs waiting, measured). Measured in buffers read.
func TestPlansHoldWhenStatisticsSayEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := unvacuumed(t)
	const n = 20_000
	if _, err := d.ExecContext(ctx, "INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, created_at) "+
		"SELECT gen_random_uuid(), 'default', 'x', '{}', 1, 'fixed:0', 0, 0, i, i FROM generate_series(1, ?) AS i", n); err != nil {
		t.Fatal(err)
	}
	// What a vacuum of the empty table left, with the table as it is now.
	if _, err := d.ExecContext(ctx, "UPDATE pg_class SET reltuples = 0, relpages = pg_relation_size(oid) / 8192 WHERE oid = 'jobs'::regclass"); err != nil {
		t.Fatalf("set the table's statistics (the test needs a superuser): %v", err)
	}
	drv := newPostgres(d)
	byPriority, byPriorityArgs := statementOf(drv.base, n, driver.Reservation{Features: driver.FeaturePriority, Queue: "default", Now: n}, 64)
	// buffers runs stmt under EXPLAIN ANALYZE, rolled back, and returns
	// the buffers it read in all.
	buffers := func(stmt string, args ...any) int {
		t.Helper()
		tx, err := d.DB.DB.BeginTx(ctx, nil) // database/sql's: the statements are sqlkit.Postgres.Render already
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		plan := explained(t, tx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) "+stmt, args...)
		total := 0
		for _, m := range regexp.MustCompile(`(?m)^\S.*\n\s+Buffers: shared hit=(\d+)`).FindAllStringSubmatch(plan, -1) {
			hit, _ := strconv.Atoi(m[1])
			total += hit
		}
		if total == 0 {
			t.Fatalf("no buffers in\n%s", plan)
		}
		if total > 2000 {
			t.Errorf("read %d buffers for 64 of %d jobs:\n%s", total, n, plan)
		}
		if stmt == byPriority && !strings.Contains(plan, "Index Scan using jobs_prioritized") {
			t.Errorf("the reservation does not search the jobs with a priority by their index:\n%s", plan)
		}
		return total
	}
	plain, plainArgs := statementOf(drv.base, n, driver.Reservation{Queue: "default", Now: n}, 64)
	t.Logf("reservation of 64: %d buffers", buffers(plain, plainArgs...))
	t.Logf("reservation of 64 by priority: %d buffers", buffers(byPriority, byPriorityArgs...))
	jobs, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: n, At: n, Limit: 100})
	if err != nil || len(jobs) != 100 {
		t.Fatalf("reserve: %d jobs, %v", len(jobs), err)
	}
	done := make([]driver.Attempt, len(jobs))
	for i, j := range jobs {
		done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts}
	}
	batch, _ := json.Marshal(done)
	t.Logf("completion: %d buffers", buffers(drv.q.complete, string(batch)))
}

// TestSQLiteNeverPlansForALimitsValue: no SQLite statement binds its
// LIMIT as a bare ?, for which SQLite plans with the value bound and
// prepares the statement again each time another is bound (a
// reservation's limit changes from one search to the next); +? is
// evaluated as the statement runs. It reads every statement of the
// driver, every shape of a reservation among them.
func TestSQLiteNeverPlansForALimitsValue(t *testing.T) {
	d := migrated(t, dbtest.SQLiteURL(t))
	s := newSQLite(d)
	var all []string
	v := reflect.ValueOf(s.q)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.String {
			all = append(all, v.Type().Field(i).Name+": "+f.String())
		}
	}
	for _, shape := range everyShape(0) {
		all = append(all, fmt.Sprintf("%+v: %s", shape, s.plans.Reservation(shape).SQL))
	}
	if len(all) < 30 {
		t.Fatalf("read %d statements; want them all", len(all))
	}
	for _, stmt := range all {
		if strings.Contains(stmt, "LIMIT ?") {
			t.Errorf("a bare LIMIT ?: %s", stmt)
		}
	}
}
