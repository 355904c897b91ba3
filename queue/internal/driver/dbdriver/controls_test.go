package dbdriver

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue/internal/driver"
)

// settingsOf reads the controls record ("" for NULL) of the row key = id
// of table, and the columns it replaced (limit_max, rate_max, rate_per;
// migration 0023_controls) as text, "" for NULL.
func settingsOf(t *testing.T, d *db.DB, table, key, id string) (string, [3]string) {
	t.Helper()
	query := "SELECT controls, CAST(limit_max AS TEXT), CAST(rate_max AS TEXT), CAST(rate_per AS TEXT) FROM " + table + " WHERE " + key + " = ?"
	if d.Dialect() == db.Postgres {
		query += "::uuid"
	}
	var v [4]sql.NullString
	if err := d.QueryRowContext(context.Background(), query, id).Scan(&v[0], &v[1], &v[2], &v[3]); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return v[0].String, [3]string{v[1].String, v[2].String, v[3].String}
}

// storeRated stores, with drv, a job limited and rated (on the queue
// rated, by the key account:9) in each of the four tables that keep a
// job's settings: in jobs (let in from queue_held as the job before it
// failed), held in queue_held, failed in failed_jobs, and a chain's
// waiting step in queue_steps. It returns their table, key column and
// id.
func storeRated(t *testing.T, drv driver.Driver, from int) [][3]string {
	t.Helper()
	ctx := context.Background()
	rated := func(n int) *driver.Job {
		j := job(n)
		j.Queue = "rated"
		j.LimitKey, j.LimitMax = "account:9", 1
		j.RateKey, j.Rate = "smtp", driver.Rate{Max: 5, PerMs: 60000}
		return j
	}
	running, held := rated(from), rated(from+1)
	for _, j := range []*driver.Job{running, held} {
		if _, _, err := drv.Insert(ctx, nil, j); err != nil {
			t.Fatal(err)
		}
	}
	got, err := drv.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "rated", Now: 10, At: 10, Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != running.ID {
		t.Fatalf("Reserve = %v, %v; want %s", got, err, running.ID)
	}
	if ok, err := drv.Fail(ctx, running.ID, got[0].Attempts, driver.Failure{Error: "refused", At: 20}); !ok || err != nil {
		t.Fatalf("Fail = %v, %v", ok, err)
	}
	// The failure let the held job in: hold another behind it.
	again := rated(from + 2)
	if _, _, err := drv.Insert(ctx, nil, again); err != nil {
		t.Fatal(err)
	}
	next := rated(from + 4)
	startChain(t, drv, job(from+3), next)
	return [][3]string{{"jobs", "id", held.ID}, {"queue_held", "id", again.ID}, {"failed_jobs", "id", running.ID}, {"queue_steps", "job_id", next.ID}}
}

// TestEveryRowKeepsItsSettingsInItsRecordAlone: every row this build
// writes to jobs, queue_held, failed_jobs and queue_steps keeps its limit
// and rate in its controls record, which the build of migration
// 0023_controls, still running through a rolling deploy, reads first;
// the columns the record replaced are no longer written (the next
// release drops them).
func TestEveryRowKeepsItsSettingsInItsRecordAlone(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			want := `{"limit_max":1,"rate_max":5,"rate_per":60000}`
			for _, row := range storeRated(t, drv, 1) {
				if controls, old := settingsOf(t, d, row[0], row[1], row[2]); controls != want || old != [3]string{} {
					t.Errorf("%s: controls %s, old columns %q; want %s and none", row[0], controls, old, want)
				}
			}
			// A batch of a plain job and a rated one (PostgreSQL's COPY, which
			// sends a plain batch's columns alone).
			plain, bulk := job(10), job(11)
			bulk.RateKey, bulk.Rate = "smtp", driver.Rate{Max: 5, PerMs: 60000}
			if _, err := drv.InsertMany(context.Background(), nil, []*driver.Job{plain, bulk}, 1); err != nil {
				t.Fatal(err)
			}
			if controls, old := settingsOf(t, d, "jobs", "id", bulk.ID); controls != `{"rate_max":5,"rate_per":60000}` || old != [3]string{} {
				t.Errorf("a rated job of a batch: controls %s, old columns %q", controls, old)
			}
			if controls, _ := settingsOf(t, d, "jobs", "id", plain.ID); controls != "" {
				t.Errorf("a plain job of a batch: controls %s; want NULL", controls)
			}
		})
	}
}

// TestAControlsRecordThatDoesNotReadFailsItsJob: a record that is not a
// JSON object of settings (written by hand) reads as a corrupt job naming
// the column, which the worker fails; its move into failed_jobs keeps it,
// and the failed job lists with no settings.
func TestAControlsRecordThatDoesNotReadFailsItsJob(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			j := job(1)
			j.RateKey, j.Rate = "smtp", driver.Rate{Max: 5, PerMs: 60000}
			if _, _, err := drv.Insert(ctx, nil, j); err != nil {
				t.Fatal(err)
			}
			update := "UPDATE jobs SET controls = 'five a minute' WHERE id = ?"
			if d.Dialect() == db.Postgres {
				update += "::uuid"
			}
			if _, err := d.ExecContext(ctx, update, j.ID); err != nil {
				t.Fatal(err)
			}
			got, err := drv.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "default", Now: 10, At: 10, Limit: 1})
			want := `column controls holds "five a minute", not a JSON object of settings`
			if err != nil || len(got) != 1 || got[0].Corrupt != want {
				t.Fatalf("Reserve = %+v, %v; want the job, corrupt: %s", got, err, want)
			}
			if ok, err := drv.Fail(ctx, j.ID, got[0].Attempts, driver.Failure{Error: "the stored job does not read: " + want, At: 20}); !ok || err != nil {
				t.Fatalf("Fail = %v, %v", ok, err)
			}
			page, err := drv.Failed(ctx, driver.FailedKey{}, 10, false)
			if err != nil || len(page) != 1 || page[0].ID != j.ID {
				t.Fatalf("Failed = %+v, %v", page, err)
			}
			if page[0].Rate != (driver.Rate{}) {
				t.Errorf("the failed job reads with the rate %v; want none read from a record that does not read", page[0].Rate)
			}
		})
	}
}

// migrationsBefore are the queue's migrations before the one named
// first.
func migrationsBefore(t *testing.T, first string) fstest.MapFS {
	t.Helper()
	before := fstest.MapFS{}
	err := fs.WalkDir(migrations.Queue, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || path >= first {
			return err
		}
		b, err := fs.ReadFile(migrations.Queue, path)
		before[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return before
}

// TestTheMigrationsGiveStoredJobsTheirRecord: jobs stored with their
// limit and rate in the columns alone, in each of the four tables, read
// with them after migration 0023_controls (jobs stored before it), and
// after 0024_controls_alone (jobs the build before 0023 stored through
// 0023's deploy). Rolled back, 0024 gives the jobs this build stored the
// columns again, for the build before 0023.
func TestTheMigrationsGiveStoredJobsTheirRecord(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		for _, first := range []string{"0023", "0024"} {
			t.Run(name+"/"+first, func(t *testing.T) {
				url := dbtest.SQLiteURL(t)
				if name == "postgres" {
					url = dbtest.PostgresURL(t)
				}
				d := dbtest.Open(t, url)
				ctx := context.Background()
				if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrationsBefore(t, first)}}).Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				cast := "?"
				if d.Dialect() == db.Postgres {
					cast = "?::uuid"
				}
				insert := func(table, columns string, args ...any) {
					t.Helper()
					marks := strings.Repeat(", ?", len(args)-1)
					if _, err := d.ExecContext(ctx, "INSERT INTO "+table+" ("+columns+") VALUES ("+cast+marks+")", args...); err != nil {
						t.Fatalf("%s: %v", table, err)
					}
				}
				common := "queue, name, payload, max_attempts, backoff, timeout_ms, created_at, rate_key, rate_max, rate_per, limit_key, limit_max"
				values := []any{"default", "x", "{}", 3, "fixed:0", 0, 1, "smtp", 5, 60000, "account:1", 2}
				waiting, held, failed, step := job(1).ID, job(2).ID, job(3).ID, job(4).ID
				insert("jobs", "id, available_at, "+common, append([]any{waiting, 1}, values...)...)
				insert("queue_held", "id, available_at, attempts, priority, snoozes, "+common, append([]any{held, 1, 0, 0, 0}, values...)...)
				insert("failed_jobs", "id, attempts, error, failed_at, "+common, append([]any{failed, 3, "refused", 5}, values...)...)
				insert("queue_steps", "job_id, flow_id, seq, step, role, state, waiting, failed_deps, run_if_failed, delay_ms, "+
					strings.Replace(common, "created_at, ", "", 1), append([]any{step, job(5).ID, 1, "s", "step", "held", 1, 0, false, 0}, append(values[:6:6], values[7:]...)...)...)
				migrator := db.NewMigrator(d, queueSets)
				if _, err := migrator.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				want := `{"limit_max":2,"rate_max":5,"rate_per":60000}`
				for _, row := range [][3]string{{"jobs", "id", waiting}, {"queue_held", "id", held}, {"failed_jobs", "id", failed}, {"queue_steps", "job_id", step}} {
					stored, _ := settingsOf(t, d, row[0], row[1], row[2])
					c, err := driver.ReadControls(stored)
					if got := fmt.Sprint(c.Stored()); err != nil || got != want {
						t.Errorf("%s: controls %s (%v) reads as %s; want %s", row[0], stored, err, got, want)
					}
				}
				if first != "0024" {
					return
				}
				// The last batch is 0024 alone.
				var rows [][3]string
				if d.Dialect() == db.Postgres {
					rows = storeRated(t, newPostgres(d), 10)
				} else {
					rows = storeRated(t, newSQLite(d), 10)
				}
				if _, err := migrator.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				for _, row := range rows {
					if _, old := settingsOf(t, d, row[0], row[1], row[2]); old != [3]string{"1", "5", "60000"} {
						t.Errorf("%s: after 0024 rolled back, the old columns hold %q; want [1 5 60000]", row[0], old)
					}
				}
			})
		}
	}
}

// TestAHeldJobIsLetInByTheLimitInItsRecord: the admission, as a job of
// its key leaves and in the upkeep of held jobs, reads a held job's limit
// from its controls record alone: queue_held.limit_max, which the next
// release drops, set to 3 by hand lets no more in than the record's 1.
func TestAHeldJobIsLetInByTheLimitInItsRecord(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			limited := func(n int) *driver.Job {
				j := job(n)
				j.LimitKey, j.LimitMax = "account:1", 1
				return j
			}
			jobs := []*driver.Job{limited(1), limited(2), limited(3)}
			for _, j := range jobs {
				if _, _, err := drv.Insert(ctx, nil, j); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.ExecContext(ctx, "UPDATE queue_held SET limit_max = 3"); err != nil {
				t.Fatal(err)
			}
			got, err := drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 10, At: 10, Limit: 3})
			if err != nil || len(got) != 1 || got[0].ID != jobs[0].ID {
				t.Fatalf("Reserve = %v, %v; want the first job alone, the others held", got, err)
			}
			if _, err := drv.Complete(ctx, []driver.Attempt{{ID: got[0].ID, Attempt: got[0].Attempts, Limit: "account:1"}}, false); err != nil {
				t.Fatal(err)
			}
			got, err = drv.Reserve(ctx, driver.Reservation{Queue: "default", Now: 20, At: 20, Limit: 3})
			if err != nil || len(got) != 1 || got[0].ID != jobs[1].ID || got[0].LimitMax != 1 {
				t.Fatalf("after the first completed, Reserve = %+v, %v; want the second, let in with its limit of 1", got, err)
			}
			// The second leaves by a cancel's way that lets nothing in (a
			// delete by hand); the upkeep of held jobs finds the key with room.
			del := "DELETE FROM jobs WHERE id = ?"
			if d.Dialect() == db.Postgres {
				del += "::uuid"
			}
			if _, err := d.ExecContext(ctx, del, jobs[1].ID); err != nil {
				t.Fatal(err)
			}
			if n, err := drv.Upkeep(ctx, driver.UpkeepHeld, 30, 0); n != 1 || err != nil {
				t.Fatalf("UpkeepHeld = %d, %v; want the third let in", n, err)
			}
		})
	}
}
