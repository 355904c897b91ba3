package dbdriver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver"
)

// TestAPlanKeptWhileJobsLookedEmptyIsMadeAgain: a worker that polls an
// empty queue on one connection has the server keep a plan of its
// reservation made while jobs looked empty, which walks and sorts the
// whole table; once a backlog arrives, UpkeepPlans sees jobs grown far
// past its statistics and analyzes it, and the connection's next
// reservation searches by the index again. A second look finds nothing
// to do.
func TestAPlanKeptWhileJobsLookedEmptyIsMadeAgain(t *testing.T) {
	d := migrated(t, dbtest.PostgresDatabaseURL(t))
	d.SetMaxOpenConns(1) // the plan kept is the connection's
	p := newPostgres(d)
	ctx := context.Background()
	r := driver.Reservation{Queue: "default", Now: 1 << 40, Limit: 64}
	stmt, args := withLimitParameter(p, r)
	plan := func() string {
		t.Helper()
		var name string
		if err := d.DB.DB.QueryRowContext(ctx, "SELECT name FROM pg_prepared_statements WHERE statement = $1", stmt).Scan(&name); err != nil {
			t.Fatalf("the reservation is not prepared on the connection: %v", err)
		}
		return strings.Join(column(t, d, "EXPLAIN EXECUTE "+name+"("+literals(args)+")"), "\n")
	}
	// The connection keeps the plan made while jobs looked empty until
	// something invalidates it: an ANALYZE, a change of schemas in its
	// database (which the other tests make in parallel in theirs: so the
	// test has a database of its own), or a reset of its caches when it
	// falls behind the catalog changes of the server's other databases.
	// A reset does this test's work before it: so a few tries, each from
	// an empty table; when every try was reset (a loaded server), the
	// plans are not compared, and the upkeep's analysis still is.
	walked := false
	for try := 1; try <= 3 && !walked; try++ {
		// jobs empty, as its statistics say: a truncated table has no page,
		// whoever used the test's schema before and whatever snapshot another
		// test holds (a VACUUM could not drop pages whose rows a snapshot may
		// still see).
		for _, q := range []string{"TRUNCATE jobs", "ANALYZE jobs"} {
			if _, err := p.sqldb.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 { // polls of an empty queue
			if got, err := p.reserveWith(ctx, stmt, args); err != nil || len(got) != 0 {
				t.Fatalf("reserve on an empty queue = %d jobs, %v", len(got), err)
			}
		}
		backlog(t, p, 20_000, "") // not analyzed: autovacuum has not come by
		walked = strings.Contains(plan(), "Seq Scan on jobs jobs_1")
	}
	if !walked {
		t.Log("in 3 tries the server reset the connection's plans before the upkeep: the plans are not compared")
	}
	if n, err := p.Upkeep(ctx, driver.UpkeepPlans, 0, 0); n != 1 || err != nil {
		t.Fatalf("UpkeepPlans with jobs grown = %d, %v; want 1, jobs analyzed", n, err)
	}
	var tuples float64
	if err := p.sqldb.QueryRowContext(ctx, "SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass").Scan(&tuples); err != nil || tuples != 20_000 {
		t.Fatalf("after UpkeepPlans the statistics count %v jobs (%v); want 20000", tuples, err)
	}
	if got := plan(); walked && !strings.Contains(got, "Index Scan using jobs_waiting on jobs jobs_1") {
		t.Fatalf("after UpkeepPlans the reservation does not search by the index:\n%s", got)
	}
	if n, err := p.Upkeep(ctx, driver.UpkeepPlans, 0, 0); n != 0 || err != nil {
		t.Fatalf("UpkeepPlans again = %d, %v; want 0: jobs is as its statistics say", n, err)
	}
}

// literals writes args as SQL literals, for EXPLAIN EXECUTE.
func literals(args []any) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			out[i] = "NULL"
		case string:
			out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(out, ", ")
}

// TestAReplanRefusedIsNotTriedEverySecond: a role that does not own
// jobs cannot analyze it (PostgreSQL skips it with a warning): the
// upkeep reports nothing analyzed, and does not try again until jobs
// grows as far again.
func TestAReplanRefusedIsNotTriedEverySecond(t *testing.T) {
	d := migrated(t, dbtest.MigratedPostgresURL(t, queueSets...))
	d.SetMaxOpenConns(1) // the role set is the connection's
	p := newPostgres(d)
	ctx := context.Background()
	for _, stmt := range []string{
		"TRUNCATE jobs",
		"ANALYZE jobs",
		"DO $$ BEGIN CREATE ROLE navree_test_not_owner; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
		"GRANT USAGE ON SCHEMA " + currentSchema(t, p) + " TO navree_test_not_owner",
	} {
		if _, err := p.sqldb.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	backlog(t, p, 20_000, "")
	if _, err := p.sqldb.ExecContext(ctx, "SET ROLE navree_test_not_owner"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.sqldb.ExecContext(context.Background(), "RESET ROLE") })
	if n, err := p.Upkeep(ctx, driver.UpkeepPlans, 0, 0); n != 0 || err != nil {
		t.Fatalf("UpkeepPlans as a role that does not own jobs = %d, %v; want 0 analyzed, no error", n, err)
	}
	if tried := p.analyzed.Load(); tried == 0 {
		t.Fatal("the refused ANALYZE is not remembered: the next look would try again")
	}
}

// currentSchema is the schema p's statements run in.
func currentSchema(t *testing.T, p *postgresDriver) string {
	t.Helper()
	var s string
	if err := p.sqldb.QueryRowContext(context.Background(), "SELECT quote_ident(current_schema())").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
