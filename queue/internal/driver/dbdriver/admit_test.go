package dbdriver

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// TestAnAdmittedJobKeepsEveryColumn: a held job let in by its key's
// admission (admit, whose statements are built from heldColumns)
// arrives in jobs
// with every column that queue_held and jobs share as it was held, but
// its due time (no earlier than the job that left) and its fairness
// place (given as it enters). The columns are read from the schema, so
// a column added to both tables and forgotten in the admission's list
// fails here, not in a user's job.
func TestAnAdmittedJobKeepsEveryColumn(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			holder, held := job(1), job(2)
			for _, j := range []*driver.Job{holder, held} {
				j.LimitKey, j.LimitMax = "account:1", 1
				if _, _, err := drv.Insert(ctx, nil, j); err != nil {
					t.Fatal(err)
				}
			}
			shared := sharedColumns(t, d, "jobs", "queue_held")
			// Every shared column the admission does not decide gets a value
			// of its own on the held job.
			kept := map[string]any{}
			var sets []string
			var args []any
			for _, c := range shared {
				if slices.Contains([]string{"id", "limit_key", "available_at", "reserved_at", "fair_seq", "flow"}, c.name) {
					continue
				}
				v := c.value()
				kept[c.name] = v
				sets = append(sets, c.name+" = ?")
				args = append(args, v)
			}
			if len(sets) < 15 {
				t.Fatalf("set %d columns of %v; want the settings", len(sets), shared)
			}
			update := "UPDATE queue_held SET " + strings.Join(sets, ", ") + " WHERE id = ?"
			if d.Dialect() == db.Postgres {
				update = "UPDATE queue_held SET " + strings.Join(sets, ", ") + " WHERE id = ?::uuid"
			}
			if res, err := d.ExecContext(ctx, update, append(args, held.ID)...); err != nil {
				t.Fatal(err)
			} else if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("the job is not held: %d rows", n)
			}
			got, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 10, At: 10, Limit: 1})
			if err != nil || len(got) != 1 || got[0].ID != holder.ID {
				t.Fatalf("reserved %v, %v; want the holder", got, err)
			}
			if _, err := drv.Complete(ctx, []driver.Attempt{{ID: holder.ID, Attempt: got[0].Attempts, Limit: holder.LimitKey}}, false); err != nil {
				t.Fatal(err)
			}
			compareRow(t, d, held.ID, kept)
		})
	}
}

// TestAReleasedStepKeepsEveryColumn: the next step of a chain, released
// from queue_steps into jobs as the step before it ends (flow.go's
// stepRelease, with its own list of columns), arrives with every column
// that queue_steps and jobs share as it waited. A column added to both
// and forgotten in the release fails here.
func TestAReleasedStepKeepsEveryColumn(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			first, next := job(1), job(2)
			nf := startChain(t, drv, first, next)
			kept := map[string]any{}
			var sets []string
			var args []any
			for _, c := range sharedColumns(t, d, "jobs", "queue_steps") {
				// A limited step is held, not released; its limit has a test of
				// its own (TestAnAdmittedJobKeepsEveryColumn).
				if c.name == "limit_key" {
					continue
				}
				v := c.value()
				if c.name == "payload" || c.name == "meta" {
					v = `{"held":"` + c.name + `"}`
				}
				kept[c.name] = v
				sets = append(sets, c.name+" = ?")
				args = append(args, v)
			}
			if len(sets) < 10 {
				t.Fatalf("set %d columns; want the settings", len(sets))
			}
			update := "UPDATE queue_steps SET " + strings.Join(sets, ", ") + " WHERE job_id = ?"
			if d.Dialect() == db.Postgres {
				update += "::uuid"
			}
			if res, err := d.ExecContext(ctx, update, append(args, next.ID)...); err != nil {
				t.Fatal(err)
			} else if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("the step is not waiting: %d rows", n)
			}
			got, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 10, At: 10, Limit: 1})
			if err != nil || len(got) != 1 || got[0].ID != first.ID {
				t.Fatalf("reserved %v, %v; want the first step", got, err)
			}
			if _, err := drv.Finish(ctx, []driver.Attempt{{ID: first.ID, Attempt: got[0].Attempts, Flow: nf.Flow.ID}}, false); err != nil {
				t.Fatal(err)
			}
			compareRow(t, d, next.ID, kept)
		})
	}
}

// startChain starts a chain of two steps, first and next, whose next
// waits in queue_steps.
func startChain(t *testing.T, drv driver.Driver, first, next *driver.Job) driver.NewFlow {
	t.Helper()
	nf := driver.NewFlow{Flow: driver.Flow{ID: "01900000-0000-7000-9000-000000000001", Kind: "chain", Name: "chain test", CreatedAt: 1,
		State: driver.FlowRunning, Total: 2, Pending: 2},
		Steps: []*driver.Step{{Job: first, Name: "1", Role: driver.RoleStep}, {Job: next, Name: "2", Role: driver.RoleStep, Waiting: 1, Deps: []string{first.ID}}},
		Edges: []driver.Edge{{From: first.ID, To: next.ID}}}
	if err := drv.StartFlow(context.Background(), nil, &nf); err != nil {
		t.Fatal(err)
	}
	return nf
}

// compareRow checks that the row of id in jobs holds the values of want,
// by column.
func compareRow(t *testing.T, d *db.DB, id string, want map[string]any) {
	t.Helper()
	for c, v := range want {
		var got sql.NullString
		query := "SELECT CAST(" + c + " AS TEXT) FROM jobs WHERE id = ?"
		if d.Dialect() == db.Postgres {
			query += "::uuid"
		}
		if err := d.QueryRowContext(context.Background(), query, id).Scan(&got); err != nil {
			t.Fatalf("the job is not in jobs (%v): was it let in?", err)
		}
		if got.String != fmt.Sprint(v) {
			t.Errorf("column %s of the job let in is %q; it waited with %q", c, got.String, fmt.Sprint(v))
		}
	}
}

// schemaColumn is a column of a table and its type, as the schema says.
type schemaColumn struct{ name, typ string }

// value is a value of c's type that no job is given by default; for
// controls, a record whose limit is 1 (the admission's test holds its
// jobs by a limit of 1).
func (c schemaColumn) value() any {
	if c.name == "controls" {
		return `{"limit_max":1,"rate_max":7,"rate_per":7000}`
	}
	switch c.typ {
	case "INTEGER", "integer", "bigint", "smallint":
		return int64(7)
	default:
		return "held-" + c.name
	}
}

// unused are the columns no build reads or writes any more, which the
// next release drops: the settings migration 0023_controls moved into a
// job's controls record.
var unused = []string{"limit_max", "rate_max", "rate_per"}

// sharedColumns are the columns of table a that b has too, with a's
// types, but for the unused ones.
func sharedColumns(t *testing.T, d *db.DB, a, b string) []schemaColumn {
	t.Helper()
	query := "SELECT name, type FROM pragma_table_info(?)"
	if d.Dialect() == db.Postgres {
		query = "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
	}
	read := func(table string) []schemaColumn {
		rows, err := d.QueryContext(context.Background(), query, table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []schemaColumn
		for rows.Next() {
			var c schemaColumn
			if err := rows.Scan(&c.name, &c.typ); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		return out
	}
	other := read(b)
	var out []schemaColumn
	for _, c := range read(a) {
		if !slices.Contains(unused, c.name) && slices.ContainsFunc(other, func(o schemaColumn) bool { return o.name == c.name }) {
			out = append(out, c)
		}
	}
	return out
}
