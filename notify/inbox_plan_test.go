package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/testing/apptest"
	"github.com/uptrace/bun"
)

// The shape of the plan tests' table: 20,000 notifications of 50 users,
// 400 each, one in ten unread, with data of 300 bytes or so, so that the
// table has many more pages than its indexes.
const (
	planRows        = 20_000
	planNotifiables = 50
)

// inboxQueries records the statements a database runs, as it runs them
// (bun writes the arguments into the text).
type inboxQueries struct {
	mu   sync.Mutex
	list []string
}

func (q *inboxQueries) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (q *inboxQueries) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.list = append(q.list, e.Query)
}

// during returns the one statement f ran.
func (q *inboxQueries) during(t *testing.T, f func() error) string {
	t.Helper()
	q.mu.Lock()
	q.list = nil
	q.mu.Unlock()
	if err := f(); err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.list) != 1 {
		t.Fatalf("ran %d statements, want 1: %q", len(q.list), q.list)
	}
	return q.list[0]
}

// inboxStatements runs each read and write of the inbox once, for user 7
// of the plan tests' table, and returns the statements they ran by name.
func inboxStatements(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	ctx := context.Background()
	hook := &inboxQueries{}
	d.AddQueryHook(hook)
	inbox := notify.NewInbox(d, apptest.FixedClock(inboxT0))
	who := inboxOwner{"user", "7"}
	page := func(q notify.ListQuery) func() error {
		return func() error {
			p, _, err := inbox.List(ctx, who, q)
			if err == nil && len(p) != 20 {
				err = fmt.Errorf("a page of %d notifications, want 20", len(p))
			}
			return err
		}
	}
	stmts := map[string]string{}
	stmts["unread count"] = hook.during(t, func() error {
		n, err := inbox.UnreadCount(ctx, who)
		if want := planRows / planNotifiables / 10; err == nil && n != want {
			err = fmt.Errorf("%d unread, want %d", n, want)
		}
		return err
	})
	stmts["first page"] = hook.during(t, page(notify.ListQuery{}))
	stmts["a page further"] = hook.during(t, page(notify.ListQuery{After: inboxID(planRows / 2)}))
	stmts["first unread page"] = hook.during(t, page(notify.ListQuery{Unread: true}))
	stmts["unread page further"] = hook.during(t, page(notify.ListQuery{Unread: true, After: inboxID(planRows * 3 / 4)}))
	stmts["mark read"] = hook.during(t, func() error {
		_, err := inbox.MarkRead(ctx, who, inboxID(7), inboxID(57), inboxID(107))
		return err
	})
	stmts["mark all read"] = hook.during(t, func() error {
		_, err := inbox.MarkAllRead(ctx, inboxOwner{"user", "8"})
		return err
	})
	stmts["delete"] = hook.during(t, func() error {
		_, err := inbox.Delete(ctx, who, inboxID(9_007), inboxID(9_057))
		return err
	})
	return stmts
}

// inboxPlanNode is a node of PostgreSQL's EXPLAIN (FORMAT JSON).
type inboxPlanNode struct {
	Type     string          `json:"Node Type"`
	Relation string          `json:"Relation Name"`
	Index    string          `json:"Index Name"`
	Cond     string          `json:"Index Cond"`
	Hit      int             `json:"Shared Hit Blocks"`
	Read     int             `json:"Shared Read Blocks"`
	Plans    []inboxPlanNode `json:"Plans"`
}

func (n inboxPlanNode) walk(f func(inboxPlanNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// scans lists the scans of n as "type on relation using index".
func (n inboxPlanNode) scans() string {
	var out []string
	n.walk(func(n inboxPlanNode) {
		if strings.Contains(n.Type, "Scan") {
			out = append(out, fmt.Sprintf("%s on %s using %s", n.Type, n.Relation, n.Index))
		}
	})
	return strings.Join(out, "; ")
}

// TestInboxPlansOnPostgres: on a table of 20,000 notifications of 50
// notifiables, analyzed as autovacuum would, the planner reads a
// notifiable's count and pages from the inbox's indexes, in their order,
// and finds the rows a write names by their primary key: none reads the
// whole table, or sorts.
func TestInboxPlansOnPostgres(t *testing.T) {
	ctx := context.Background()
	d := migratedInboxDB(t, dbtest.PostgresURL(t))
	for _, stmt := range []string{
		"INSERT INTO notifications (id, type, notifiable_type, notifiable_id, data, read_at, created_at) " +
			"SELECT ('01900000-' || lpad(to_hex(i / 65536), 4, '0') || '-7000-8000-' || lpad(to_hex(i % 65536), 12, '0'))::uuid, " +
			"'invoice.paid', 'user', (i % 50)::text, jsonb_build_object('invoice_id', 'inv-' || i, 'note', repeat('x', 250 + i % 100)), " +
			"CASE WHEN i % 500 >= 50 THEN i END, i FROM generate_series(0, 19999) AS i",
		// A count from the index alone needs the visibility map, which a
		// vacuum keeps.
		"VACUUM ANALYZE notifications",
	} {
		if _, err := d.DB.DB.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// The ids are inboxID's, so that the statements' ids and cursors fall among them.
	var found bool
	if err := d.DB.DB.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM notifications WHERE id = $1)", inboxID(12_345)).Scan(&found); err != nil || !found {
		t.Fatalf("the table does not hold inboxID(12345): %v, %v", found, err)
	}
	// A write that names its rows finds each by its id, in the primary
	// key or in an index of the notifiable (which holds the id as well).
	byID := []string{"notifications_pkey", "notifications_notifiable", "notifications_unread"}
	want := map[string][]string{
		"unread count":        {"notifications_unread"},
		"first page":          {"notifications_notifiable"},
		"a page further":      {"notifications_notifiable"},
		"first unread page":   {"notifications_unread"},
		"unread page further": {"notifications_unread"},
		"mark read":           byID,
		"mark all read":       {"notifications_unread"},
		"delete":              byID,
	}
	for name, stmt := range inboxStatements(t, d) {
		t.Run(name, func(t *testing.T) {
			explain := "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "
			if !strings.HasPrefix(stmt, "SELECT") {
				explain = "EXPLAIN (FORMAT JSON) " // planned, not run again
			}
			var out string
			if err := d.DB.DB.QueryRowContext(ctx, explain+stmt).Scan(&out); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
			var plans []struct{ Plan inboxPlanNode }
			if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("EXPLAIN said %s: %v", out, err)
			}
			p := plans[0].Plan
			if strings.HasPrefix(stmt, "SELECT") {
				t.Logf("%d buffers: %s", p.Hit+p.Read, p.scans())
			} else {
				t.Log(p.scans())
			}
			uses, reads := false, false
			p.walk(func(n inboxPlanNode) {
				uses = uses || slices.Contains(want[name], n.Index) && strings.Contains(n.Type, "Index") &&
					(!slices.Equal(want[name], byID) || strings.Contains(n.Cond, "id = ANY"))
				reads = reads || n.Type == "Seq Scan" || n.Type == "Sort"
			})
			if !uses || reads {
				t.Errorf("the plan of %s is %s; want it from %s, without reading the table whole or sorting:\n%s", stmt, p.scans(), want[name], out)
			}
			if strings.HasPrefix(stmt, "SELECT") && p.Hit+p.Read > 100 {
				t.Errorf("read %d buffers, want at most 100", p.Hit+p.Read)
			}
		})
	}
}

// TestInboxPlansOnSQLite: SQLite plans the same statements on the same
// indexes, without statistics (as an app's database is) and with them.
func TestInboxPlansOnSQLite(t *testing.T) {
	ctx := context.Background()
	d := migratedInboxDB(t, dbtest.SQLiteURL(t))
	if _, err := d.DB.DB.ExecContext(ctx, "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999) "+
		"INSERT INTO notifications (id, type, notifiable_type, notifiable_id, data, read_at, created_at) "+
		"SELECT printf('01900000-%04x-7000-8000-%012x', i / 65536, i % 65536), 'invoice.paid', 'user', CAST(i % 50 AS TEXT), "+
		"json_object('invoice_id', 'inv-' || i, 'note', printf('%.*c', 250 + i % 100, 'x')), "+
		"CASE WHEN i % 500 >= 50 THEN i END, i FROM n"); err != nil {
		t.Fatal(err)
	}
	var found bool
	if err := d.DB.DB.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM notifications WHERE id = ?)", inboxID(12_345)).Scan(&found); err != nil || !found {
		t.Fatalf("the table does not hold inboxID(12345): %v, %v", found, err)
	}
	index := func(step string) *regexp.Regexp {
		return regexp.MustCompile(`^SEARCH notifications USING ` + regexp.QuoteMeta(step) + `$`)
	}
	// A write that names its rows finds each by its id, in the primary
	// key or in an index of the notifiable (which holds the id as well).
	byID := regexp.MustCompile(`^SEARCH notifications USING (COVERING )?INDEX \w+ \((.* AND )?id=\?\)$`)
	want := map[string]*regexp.Regexp{
		// SQLite does not take a partial index as covering when its
		// WHERE names a column it does not hold (read_at): the count
		// looks each unread notification up in the table.
		"unread count":        index("INDEX notifications_unread (notifiable_type=? AND notifiable_id=?)"),
		"first page":          index("INDEX notifications_notifiable (notifiable_type=? AND notifiable_id=?)"),
		"a page further":      index("INDEX notifications_notifiable (notifiable_type=? AND notifiable_id=? AND id<?)"),
		"first unread page":   index("INDEX notifications_unread (notifiable_type=? AND notifiable_id=?)"),
		"unread page further": index("INDEX notifications_unread (notifiable_type=? AND notifiable_id=? AND id<?)"),
		"mark read":           byID,
		"mark all read":       index("INDEX notifications_unread (notifiable_type=? AND notifiable_id=?)"),
		"delete":              byID,
	}
	stmts := inboxStatements(t, d)
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := d.DB.DB.ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		for name, stmt := range stmts {
			t.Run(fmt.Sprintf("%s, analyzed %v", name, analyzed), func(t *testing.T) {
				plan := inboxSQLitePlan(t, d, stmt)
				t.Log(plan)
				if !want[name].MatchString(plan) {
					t.Errorf("the plan of %s is not %s", stmt, want[name])
				}
				if strings.Contains(plan, "SCAN notifications") || strings.Contains(plan, "TEMP B-TREE") {
					t.Errorf("the plan reads the table whole, or sorts")
				}
			})
		}
	}
}

// inboxSQLitePlan returns SQLite's EXPLAIN QUERY PLAN of stmt, a step a
// line.
func inboxSQLitePlan(t *testing.T, d *db.DB, stmt string) string {
	t.Helper()
	rows, err := d.DB.DB.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+stmt)
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
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
