package dbdriver

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// TestJobIDsSearchesThePrimaryKeys: the search of a prefix of ids
// (queue:job's) is a range of each table's primary key, on SQLite and
// PostgreSQL, never a scan of a table: a prefix costs what its matches
// cost, however many jobs are stored.
func TestJobIDsSearchesThePrimaryKeys(t *testing.T) {
	t.Parallel()
	args := []any{"0190a1b2-0000-0000-0000-000000000000", "0190a1b2-ffff-ffff-ffff-ffffffffffff", 6}
	var all []any
	for range 4 {
		all = append(all, args...)
	}
	all = append(all, 6)
	t.Run("sqlite", func(t *testing.T) {
		plan := sqlitePlan(t, migrated(t, dbtest.SQLiteURL(t)), jobIDs, all...)
		for _, table := range []string{"jobs", "queue_held", "failed_jobs", "succeeded_jobs"} {
			// queue_held has rowids: its primary key is an index of its own.
			pk := regexp.MustCompile(`SEARCH ` + table + ` USING (PRIMARY KEY|COVERING INDEX sqlite_autoindex_` + table + `_1) \(id>\? AND id<\?\)`)
			if !pk.MatchString(plan) || strings.Contains(plan, "SCAN "+table) {
				t.Errorf("plan: %s; want a search of the primary key of %s", plan, table)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		d := migrated(t, dbtest.PostgresURL(t))
		ctx := context.Background()
		tx, err := d.DB.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		// The tables are empty: without this a scan of one costs least.
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, "EXPLAIN "+sqlkit.Postgres.Render(jobIDs), all...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		for _, index := range []string{"jobs_pkey", "queue_held_pkey", "failed_jobs_pkey", "succeeded_jobs_pkey"} {
			if !strings.Contains(plan.String(), "Index Only Scan using "+index+" on ") || strings.Contains(plan.String(), "Seq Scan") {
				t.Errorf("plan:\n%swant a range of %s", plan.String(), index)
			}
		}
	})
}
