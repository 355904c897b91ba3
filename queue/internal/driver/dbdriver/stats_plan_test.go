package dbdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver"
)

// planNode is a node of PostgreSQL's EXPLAIN (FORMAT JSON). Its buffers
// count those of the nodes below it.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Hit      int        `json:"Shared Hit Blocks"`
	Read     int        `json:"Shared Read Blocks"`
	Rows     int        `json:"Actual Rows"`
	Loops    int        `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) buffers() int { return n.Hit + n.Read }

// walk calls f for n and every node below it.
func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// scans lists the scans of n as "type on relation using index (buffers)".
func (n planNode) scans() string {
	var out []string
	n.walk(func(n planNode) {
		if strings.Contains(n.Type, "Scan") && (n.Relation != "" || n.Index != "") {
			out = append(out, fmt.Sprintf("%s on %s using %s (%d buffers)", n.Type, n.Relation, n.Index, n.buffers()))
		}
	})
	return strings.Join(out, "; ")
}

// has reports whether a node of n is of typ, on relation or index when
// they are not "".
func (n planNode) has(typ, relation, index string) bool {
	found := false
	n.walk(func(n planNode) {
		found = found || n.Type == typ && (relation == "" || n.Relation == relation) && (index == "" || n.Index == index)
	})
	return found
}

// The shape of the large PostgreSQL table: 120,000 jobs on four queues,
// now at 10,000,000 ms. Jobs 1 to 60,000 were due before now, every 50th
// of them (1,200) is running, reserved in the 300 s before now; jobs
// 60,001 to 120,000 are delayed; every 1,000th job is of a rare type.
// 50,000 failed jobs on five queues. Payloads of 300 to 700 bytes, so
// that the table has many more pages than its indexes.
const (
	planNow     = 10_000_000
	planRunning = 1_200
	statsLimit  = 100_001 // as Inspector.Stats asks
)

var bigTables = []string{
	"INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, reserved_at, created_at) " +
		"SELECT gen_random_uuid(), (ARRAY['default', 'default', 'default', 'mail', 'sync', 'reports'])[1 + i % 6], " +
		"CASE WHEN i % 1000 = 7 THEN 'rare.job' ELSE (ARRAY['contacts.export', 'mail.send', 'calendar.sync'])[1 + i % 3] END, " +
		"'\"' || repeat('x', 300 + i % 400) || '\"', 3, 'fixed:0', CASE WHEN i % 7 = 0 THEN 0 ELSE 60000 END, " +
		"CASE WHEN i <= 60000 AND i % 50 = 0 THEN 1 ELSE 0 END, " +
		"CASE WHEN i <= 60000 THEN i * 100 ELSE 10000000 + i * 10 END, " +
		"CASE WHEN i <= 60000 AND i % 50 = 0 THEN 9700000 + (i * 7919) % 300000 END, 1 " +
		"FROM generate_series(1, 120000) AS i",
	"INSERT INTO failed_jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at) " +
		"SELECT gen_random_uuid(), (ARRAY['default', 'default', 'mail', 'sync', 'reports', 'old'])[1 + i % 6], 'mail.send', " +
		"'\"' || repeat('y', 300) || '\"', 3, 'fixed:0', 60000, 3, 'boom', 1, i * 50 FROM generate_series(1, 50000) AS i",
	// An index-only count needs the visibility map, which a vacuum keeps
	// (autovacuum, on a backlog whose rows no worker touches); without
	// it every entry costs a visit to the table, and the planner rightly
	// reads the table instead to count most of its rows.
	"VACUUM ANALYZE jobs",
	"VACUUM ANALYZE failed_jobs",
}

// TestReadSideUsesTheIndexesOnPostgres: on a large table the counts of
// Stats read the index of each state, not the table, and a page of Jobs
// reads a few buffers for each job it returns, from the cursor, in the
// index that orders its state. Measured in buffers, which do not depend
// on the machine; the bounds are loose, as other tests share the server.
func TestReadSideUsesTheIndexesOnPostgres(t *testing.T) {
	manyRows(t)
	t.Parallel()
	ctx := context.Background()
	d := migrated(t, dbtest.PostgresURL(t))
	for _, stmt := range bigTables {
		if _, err := d.DB.DB.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	pages := func(relation string) int {
		var n int
		if err := d.DB.DB.QueryRowContext(ctx, "SELECT relpages FROM pg_class WHERE oid = to_regclass($1)", relation).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	heap := pages("jobs")
	t.Logf("pages: jobs %d, jobs_waiting %d, jobs_reserved %d, failed_jobs %d, failed_jobs_failed_at %d",
		heap, pages("jobs_waiting"), pages("jobs_reserved"), pages("failed_jobs"), pages("failed_jobs_failed_at"))
	explain := func(t *testing.T, stmt string, args ...any) planNode {
		t.Helper()
		var out string
		if err := d.DB.DB.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+stmt, args...).Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
			t.Fatalf("EXPLAIN said %s: %v", out, err)
		}
		p := plans[0].Plan
		t.Logf("%d buffers: %s", p.buffers(), p.scans())
		if p.has("Seq Scan", "jobs", "") {
			t.Errorf("the statement reads the whole table jobs:\n%s", out)
		}
		return p
	}

	q := &postgresRead
	t.Run("stats", func(t *testing.T) {
		p := explain(t, q.stats, planNow, statsLimit, planNow, statsLimit, planNow, statsLimit, planNow, statsLimit, planNow, planNow, planNow, statsLimit, statsLimit)
		var waiting, running planNode
		p.walk(func(n planNode) {
			switch {
			case n.Type == "Index Only Scan" && n.Index == "jobs_waiting":
				waiting = n
			case n.Type == "Bitmap Heap Scan" && n.Relation == "jobs", n.Type == "Index Scan" && n.Index == "jobs_reserved":
				running = n
			}
		})
		if waiting.Type == "" || waiting.buffers() > 2*pages("jobs_waiting")+20 {
			t.Errorf("the waiting and delayed jobs are not counted from jobs_waiting alone: %s", p.scans())
		}
		if running.Type == "" || running.buffers() > 2*planRunning+50 {
			t.Errorf("the running jobs are not counted from jobs_reserved and their own rows: %s", p.scans())
		}
		if p.has("Seq Scan", "failed_jobs", "") {
			t.Errorf("the failed jobs are counted by reading failed_jobs whole, not failed_jobs_queue: %s", p.scans())
		}
	})

	const limit = 51 // a page of 50, and one more that says whether a page follows
	mid := driver.JobKey{At: 3_000_000, ID: firstID}
	tests := []struct {
		name  string
		shape pageShape
		every bool // waiting or delayed jobs of every queue
		args  []any
		index string // the index that orders the page
		// perRow bounds the buffers read per job of the page; max, when
		// not 0, the buffers in all instead.
		perRow, max int
	}{
		{name: "waiting of a queue", shape: pageShape{driver.Waiting, true, false}, args: bothArgs("mail", mid.At, mid.ID, planNow, limit), index: "jobs_waiting", perRow: 3},
		{name: "waiting of a queue, first page", shape: pageShape{driver.Waiting, true, false}, args: bothArgs("default", int64(math.MinInt64), firstID, planNow, limit), index: "jobs_waiting", perRow: 3},
		{name: "waiting of a queue and a type", shape: pageShape{driver.Waiting, true, true}, args: bothArgs("default", mid.At, mid.ID, planNow, "mail.send", limit), index: "jobs_waiting", perRow: 6},
		{name: "delayed of a queue", shape: pageShape{driver.Waiting, true, false}, args: bothArgs("sync", planNow, lastID, int64(math.MaxInt64), limit), index: "jobs_waiting", perRow: 3},
		{name: "waiting of every queue", every: true, args: append(bothArgs(mid.At, mid.ID, planNow, limit), limit), index: "jobs_waiting", perRow: 8},
		{name: "delayed of every queue", every: true, args: append(bothArgs(planNow, lastID, int64(math.MaxInt64), limit), limit), index: "jobs_waiting", perRow: 8},
		{name: "failed", shape: pageShape{driver.Failed, false, false}, args: []any{int64(1_000_000), firstID, limit}, index: "failed_jobs_failed_at", perRow: 3},
		{name: "failed of a queue", shape: pageShape{driver.Failed, true, false}, args: []any{int64(1_000_000), firstID, "sync", limit}, index: "failed_jobs_failed_at", perRow: 3},
		// Running jobs: PostgreSQL reads each after the cursor and sorts
		// them, jobs_reserved holding no id to order ties by; the work is
		// bounded by the jobs running, not by the table.
		{name: "running", shape: pageShape{driver.Running, false, false}, args: []any{int64(9_800_000), firstID, limit}, index: "jobs_reserved", max: 2*planRunning + 50},
		{name: "running of a queue", shape: pageShape{driver.Running, true, false}, args: []any{int64(math.MinInt64), firstID, "sync", limit}, index: "jobs_reserved", max: 2*planRunning + 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt := q.pages[tt.shape]
			if tt.every {
				stmt = q.everyQueue[0]
			}
			p := explain(t, stmt, tt.args...)
			if p.Rows != limit {
				t.Fatalf("the page holds %d jobs, want %d", p.Rows, limit)
			}
			if !p.has("Index Scan", "", tt.index) && !p.has("Index Only Scan", "", tt.index) && !p.has("Bitmap Index Scan", "", tt.index) {
				t.Errorf("the page is not read from %s: %s", tt.index, p.scans())
			}
			if tt.max != 0 {
				if p.buffers() > tt.max {
					t.Errorf("the page read %d buffers; want at most %d, about one per running job", p.buffers(), tt.max)
				}
				return
			}
			if !tt.every {
				// The first of the two indexes' pages (byDue) may be sorted:
				// at most two pages, never the queue.
				p.walk(func(n planNode) {
					if n.Type == "Sort" && len(n.Plans) > 0 && n.Plans[0].Rows > 2*limit {
						t.Errorf("the page is sorted from %d jobs rather than read in the order of %s", n.Plans[0].Rows, tt.index)
					}
				})
			}
			if bound := tt.perRow*limit + 30; p.buffers() > bound || p.buffers()*20 > heap {
				t.Errorf("the page read %d buffers; want at most %d, and at most a twentieth of the table's %d pages", p.buffers(), bound, heap)
			}
		})
	}

	// What the indexes do not serve: a filter by a rare type walks the
	// queue's waiting jobs, and PostgreSQL reads the table rather than
	// the index for it (see the report of this change).
	t.Run("waiting of a rare type", func(t *testing.T) {
		var out string
		if err := d.DB.DB.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+q.pages[pageShape{driver.Waiting, true, true}],
			bothArgs("default", int64(math.MinInt64), firstID, planNow, "rare.job", limit)...).Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plans []struct{ Plan planNode }
		if err := json.Unmarshal([]byte(out), &plans); err != nil {
			t.Fatal(err)
		}
		t.Logf("not served: %d buffers: %s", plans[0].Plan.buffers(), plans[0].Plan.scans())
	})
}

// bothArgs are the arguments of a read of both indexes of the waiting jobs
// (byDue): those of one, twice, and the limit, the last of them.
func bothArgs(args ...any) []any {
	return append(append(args, args...), args[len(args)-1])
}

// sqlitePlan returns SQLite's EXPLAIN QUERY PLAN of stmt, a step a line.
func sqlitePlan(t *testing.T, d *db.DB, stmt string, args ...any) string {
	t.Helper()
	rows, err := d.DB.DB.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// manyRows skips t in a -short run: it stores thousands of rows, which
// takes seconds, and runs in the full suite.
func manyRows(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("stores thousands of rows: not in a -short run")
	}
}

// TestReadSideUsesTheIndexesOnSQLite: SQLite plans each read statement
// on the index of its state, without statistics (as an app's database
// is) and with them.
func TestReadSideUsesTheIndexesOnSQLite(t *testing.T) {
	manyRows(t)
	t.Parallel()
	ctx := context.Background()
	d := migrated(t, dbtest.SQLiteURL(t))
	if _, err := d.DB.DB.ExecContext(ctx, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "+
		"INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, reserved_at, created_at) "+
		"SELECT printf('01900000-0000-7000-8000-%012d', i), CASE i % 4 WHEN 0 THEN 'mail' ELSE 'default' END, 'x', '{}', 3, 'fixed:0', 60000, "+
		"0, i * 100, CASE WHEN i % 50 = 0 THEN i END, 1 FROM n"); err != nil {
		t.Fatal(err)
	}
	q := &sqliteRead
	const limit = 51
	statements := []struct {
		name  string
		stmt  string
		args  []any
		want  []string // what the plan must say
		order bool     // whether it may sort part of its order itself
	}{
		// SQLite does not take jobs_waiting as covering (its WHERE names
		// reserved_at, which it does not hold): counting the waiting jobs
		// looks each up in the table (see the report of this change).
		{"stats", q.stats, []any{planNow, statsLimit, planNow, statsLimit, planNow, statsLimit, planNow, statsLimit, planNow, planNow, planNow, statsLimit, statsLimit},
			[]string{"SEARCH jobs USING INDEX jobs_waiting (queue=? AND available_at<?)", "SEARCH jobs USING INDEX jobs_fair_due (queue=? AND available_at<?)",
				"SEARCH jobs USING INDEX jobs_reserved (reserved_at>?)", "SEARCH queue_held USING COVERING INDEX queue_held_queue (queue=?)"}, true},
		{"queues", q.queues, nil, []string{"SEARCH j USING INDEX jobs_waiting (queue>?)", "SEARCH j USING INDEX jobs_fair_due (queue>?)"}, false},
		// A page of waiting jobs merges a page of each index (byDue): SQLite
		// sorts each side's page, at most the limit, for the merge, not
		// knowing that its subquery returns it in order.
		{"waiting of a queue", q.pages[pageShape{driver.Waiting, true, false}], bothArgs("mail", 0, firstID, planNow, limit),
			[]string{"MERGE (UNION ALL)", "SEARCH jobs USING INDEX jobs_waiting (queue=? AND (available_at,id)>(?,?) AND available_at<?)",
				"SEARCH jobs USING INDEX jobs_fair_due (queue=? AND (available_at,id)>(?,?) AND available_at<?)"}, true},
		{"waiting of a queue and a type", q.pages[pageShape{driver.Waiting, true, true}], bothArgs("mail", 0, firstID, planNow, "x", limit),
			[]string{"MERGE (UNION ALL)", "SEARCH jobs USING INDEX jobs_waiting (queue=? AND (available_at,id)>(?,?) AND available_at<?)",
				"SEARCH jobs USING INDEX jobs_fair_due (queue=? AND (available_at,id)>(?,?) AND available_at<?)"}, true},
		// The table has no rowid: an index holds the primary key, and
		// jobs_reserved orders by reserved_at, then id, itself.
		{"running", q.pages[pageShape{driver.Running, false, false}], []any{0, firstID, limit},
			[]string{"SEARCH jobs USING INDEX jobs_reserved ((reserved_at,id)>(?,?))"}, false},
		{"running of a queue and a type", q.pages[pageShape{driver.Running, true, true}], []any{0, firstID, "mail", "x", limit},
			[]string{"SEARCH jobs USING INDEX jobs_reserved ((reserved_at,id)>(?,?))"}, false},
		{"failed", q.pages[pageShape{driver.Failed, false, false}], []any{0, firstID, limit},
			[]string{"SEARCH failed_jobs USING INDEX failed_jobs_failed_at ((failed_at,id)>(?,?))"}, false},
		{"failed of a queue and a type", q.pages[pageShape{driver.Failed, true, true}], []any{0, firstID, "mail", "x", limit},
			[]string{"SEARCH failed_jobs USING INDEX failed_jobs_queue (queue=? AND (failed_at,id)>(?,?))"}, false},
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := d.DB.DB.ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range statements {
			t.Run(fmt.Sprintf("%s, analyzed %v", s.name, analyzed), func(t *testing.T) {
				plan := sqlitePlan(t, d, s.stmt, s.args...)
				t.Log(plan)
				for _, want := range s.want {
					if !strings.Contains(plan, want) {
						t.Errorf("the plan does not say %q", want)
					}
				}
				for _, step := range strings.Split(plan, "; ") {
					if step == "SCAN jobs" || strings.HasPrefix(step, "SCAN jobs USING PRIMARY KEY") {
						t.Errorf("the plan reads the whole table jobs: %s", step)
					}
				}
				if !s.order && strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
					t.Errorf("the page is sorted rather than read in the order of its index")
				}
			})
		}
	}
}
