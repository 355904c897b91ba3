package dbdriver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/navree/navree/db"
)

// TestEveryMoveCarriesEveryColumn: the columns that jobs and failed_jobs
// share (but for the unused ones) are those every move between them sets
// (the id, the attempts, the errors, the snoozes) and settings, which
// every move carries; and
// queue_held holds every setting. So a column added to jobs and to
// failed_jobs and forgotten in settings fails here, not in a user's
// history (the snoozes were once lost so).
func TestEveryMoveCarriesEveryColumn(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			_, d := openDriver(t, name)
			jobs, failed, held := columnsOf(t, d, "jobs"), columnsOf(t, d, "failed_jobs"), columnsOf(t, d, "queue_held")
			var shared []string
			for _, c := range jobs {
				if slices.Contains(failed, c) && !slices.Contains(unused, c) {
					shared = append(shared, c)
				}
			}
			want := append([]string{"id", "attempts", "errors", "snoozes"}, strings.Split(settings, ", ")...)
			slices.Sort(shared)
			slices.Sort(want)
			if !slices.Equal(shared, want) {
				t.Fatalf("jobs and failed_jobs share %v; the moves carry %v", shared, want)
			}
			for _, c := range strings.Split(settings, ", ") {
				if !slices.Contains(held, c) {
					t.Fatalf("queue_held has no column %s of the settings", c)
				}
			}
		})
	}
}

// columnsOf lists the columns of table.
func columnsOf(t *testing.T, d *db.DB, table string) []string {
	t.Helper()
	query := "SELECT name FROM pragma_table_info(?)"
	if d.Dialect() == db.Postgres {
		query = "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
	}
	rows, err := d.QueryContext(context.Background(), query, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
