package queue_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/navree/navree/db"
)

// A reservation, as the database recorded it when a worker took a job:
// its place in the order of reservations (seq), the job's type, payload,
// priority and fairness place, and the reservation's holder and time.
// Reservations made by one statement have one holder and one time.
type reservation struct {
	seq        int64
	job        string
	name       string
	payload    string
	priority   int
	place      int64 // the fairness place; 0 without one
	attempt    int
	by         string
	reservedAt int64
}

// recordReservations makes the database at url record every reservation
// of a job in test_reservations, by a trigger on jobs, in the order they
// were made: on SQLite, whose writes take turns, that order is the order
// of the commits; on PostgreSQL, that of the statements' ends, which for
// the reservations of one worker is their order too. The cross-process
// tests assert on this order, which is the mechanism's, rather than on
// when the handlers happened to start: a worker held up between a
// reservation and its handler's start (a loaded machine) changes the
// second, never the first.
func recordReservations(t *testing.T, d *db.DB, url string) func() []reservation {
	t.Helper()
	ddl := []string{
		"CREATE TABLE test_reservations (seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, name TEXT NOT NULL, payload TEXT NOT NULL, " +
			"priority INTEGER NOT NULL, place BIGINT, attempt INTEGER NOT NULL, reserved_by TEXT, reserved_at BIGINT NOT NULL)",
		"CREATE TRIGGER test_reserved AFTER UPDATE OF reserved_at ON jobs WHEN OLD.reserved_at IS NULL AND NEW.reserved_at IS NOT NULL BEGIN " +
			"INSERT INTO test_reservations (job_id, name, payload, priority, place, attempt, reserved_by, reserved_at) " +
			"VALUES (NEW.id, NEW.name, NEW.payload, NEW.priority, NEW.fair_seq, NEW.attempts, NEW.reserved_by, NEW.reserved_at); END",
	}
	if strings.HasPrefix(url, "postgres") {
		ddl = []string{
			"CREATE TABLE test_reservations (seq BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, name TEXT NOT NULL, payload TEXT NOT NULL, " +
				"priority INTEGER NOT NULL, place BIGINT, attempt INTEGER NOT NULL, reserved_by TEXT, reserved_at BIGINT NOT NULL)",
			"CREATE FUNCTION test_reserved() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " +
				"INSERT INTO test_reservations (job_id, name, payload, priority, place, attempt, reserved_by, reserved_at) " +
				"VALUES (NEW.id::text, NEW.name, NEW.payload, NEW.priority, NEW.fair_seq, NEW.attempts, NEW.reserved_by, NEW.reserved_at); RETURN NULL; END $$",
			"CREATE TRIGGER test_reserved AFTER UPDATE OF reserved_at ON jobs FOR EACH ROW " +
				"WHEN (OLD.reserved_at IS NULL AND NEW.reserved_at IS NOT NULL) EXECUTE FUNCTION test_reserved()",
		}
	}
	for _, stmt := range ddl {
		if _, err := d.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	return func() []reservation {
		t.Helper()
		rows, err := d.QueryContext(ctx, "SELECT seq, job_id, name, payload, priority, COALESCE(place, 0), attempt, COALESCE(reserved_by, ''), reserved_at "+
			"FROM test_reservations ORDER BY seq")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var all []reservation
		for rows.Next() {
			var r reservation
			if err := rows.Scan(&r.seq, &r.job, &r.name, &r.payload, &r.priority, &r.place, &r.attempt, &r.by, &r.reservedAt); err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return all
	}
}

// byStatement splits the reservations of each holder into the groups
// one statement made (one holder, one time), in order: a statement takes
// its jobs at once, in no order among them.
func byStatement(all []reservation) map[string][][]reservation {
	out := map[string][][]reservation{}
	for _, r := range all {
		groups := out[r.by]
		if n := len(groups); n > 0 && groups[n-1][0].reservedAt == r.reservedAt {
			groups[n-1] = append(groups[n-1], r)
		} else {
			out[r.by] = append(groups, []reservation{r})
		}
	}
	return out
}

// inOrderByWorker checks that each worker took the jobs kept by keep in
// the order before says, statement by statement: no job of a statement
// comes before a job of an earlier statement of the same worker. It is
// what a search guarantees across processes whatever the machine's
// speed: a search takes the jobs first in the order that it does not see
// taken (or, on PostgreSQL, locked by another worker's search), and a
// job once taken by another is never waiting again in these tests.
func inOrderByWorker(t *testing.T, all []reservation, keep func(reservation) bool, before func(a, b reservation) bool, describe func(reservation) string) {
	t.Helper()
	for by, statements := range byStatement(all) {
		inOrder(t, "worker "+by, statements, keep, before, describe)
	}
}

// inOrderOnSQLite checks, on SQLite, that the workers took the jobs kept
// by keep in the order before says, across all of them: SQLite's writes
// take turns, so each search sees every reservation made before it.
func inOrderOnSQLite(t *testing.T, url string, all []reservation, keep func(reservation) bool, before func(a, b reservation) bool, describe func(reservation) string) {
	t.Helper()
	if strings.HasPrefix(url, "postgres") {
		return
	}
	var statements [][]reservation
	for _, r := range all {
		if n := len(statements); n > 0 && statements[n-1][0].by == r.by && statements[n-1][0].reservedAt == r.reservedAt {
			statements[n-1] = append(statements[n-1], r)
		} else {
			statements = append(statements, []reservation{r})
		}
	}
	inOrder(t, "the workers", statements, keep, before, describe)
}

// inOrder checks that no job kept by keep of a statement comes before
// one of an earlier statement.
func inOrder(t *testing.T, who string, statements [][]reservation, keep func(reservation) bool, before func(a, b reservation) bool, describe func(reservation) string) {
	t.Helper()
	var earlier []reservation
	for _, s := range statements {
		s = slices.DeleteFunc(slices.Clone(s), func(r reservation) bool { return !keep(r) })
		for _, r := range s {
			for _, e := range earlier {
				if before(r, e) {
					t.Errorf("%s took %s in a search after the one that took %s; want the order of the search", who, describe(r), describe(e))
					return
				}
			}
		}
		earlier = append(earlier, s...)
	}
}
