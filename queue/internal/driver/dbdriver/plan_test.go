package dbdriver

import (
	"context"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
)

// TestReservationUsesTheWaitingIndex: without the partial index over
// waiting rows, reservation scans every row (about 12 jobs/s on a large
// table, measured).
func TestReservationUsesTheWaitingIndex(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Open(t, dbtest.SQLiteURL(t))
	if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	q := New(d).q
	for name, stmt := range map[string]string{"reserve": q.reserve, "find unique": q.findUnique} {
		rows, err := d.DB.DB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+stmt, 1, "default", 1, 10)
		if name == "find unique" {
			rows, err = d.DB.DB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+stmt, "k")
		}
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "; ")
		want := map[string]string{"reserve": "USING INDEX jobs_waiting", "find unique": "INDEX jobs_unique_key"}[name]
		if !strings.Contains(joined, want) || strings.Contains(joined, "SCAN jobs") {
			t.Errorf("%s plan: %s; want it %s and no scan", name, joined, want)
		}
	}
}
