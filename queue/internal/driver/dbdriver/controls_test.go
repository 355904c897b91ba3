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

// legacyOf reads the columns of legacySettings of the row key in
// table, as text ("" for NULL).
func legacyOf(t *testing.T, d *db.DB, table, key, id string) [3]string {
	t.Helper()
	query := "SELECT CAST(limit_max AS TEXT), CAST(rate_max AS TEXT), CAST(rate_per AS TEXT) FROM " + table + " WHERE " + key + " = ?"
	if d.Dialect() == db.Postgres {
		query += "::uuid"
	}
	var v [3]sql.NullString
	if err := d.QueryRowContext(context.Background(), query, id).Scan(&v[0], &v[1], &v[2]); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return [3]string{v[0].String, v[1].String, v[2].String}
}

// TestTheBuildBeforeReadsTheSettingsThisOneWrites: through a rolling
// deploy, the build before migration 0023_controls reads a job's limit
// and rate from the columns of legacySettings alone: every row this
// build writes to jobs, queue_held, failed_jobs and queue_steps has them
// beside its controls record.
func TestTheBuildBeforeReadsTheSettingsThisOneWrites(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			want := [3]string{"1", "5", "60000"}
			rated := func(n int) *driver.Job {
				j := job(n)
				j.LimitKey, j.LimitMax = "account:1", 1
				j.RateKey, j.Rate = "smtp", driver.Rate{Max: 5, PerMs: 60000}
				return j
			}
			running, held := rated(1), rated(2)
			for _, j := range []*driver.Job{running, held} {
				if _, _, err := drv.Insert(ctx, nil, j); err != nil {
					t.Fatal(err)
				}
			}
			if got := legacyOf(t, d, "jobs", "id", running.ID); got != want {
				t.Errorf("jobs: %v; want %v", got, want)
			}
			// A batch of a plain job and a rated one (PostgreSQL's COPY, which
			// sends a plain batch's columns alone).
			plain, bulk := job(10), job(11)
			bulk.RateKey, bulk.Rate = "smtp", driver.Rate{Max: 5, PerMs: 60000}
			if _, err := drv.InsertMany(ctx, nil, []*driver.Job{plain, bulk}, 1); err != nil {
				t.Fatal(err)
			}
			if got := legacyOf(t, d, "jobs", "id", bulk.ID); got != [3]string{"", "5", "60000"} {
				t.Errorf("jobs, a rated job of a batch: %v; want [ 5 60000]", got)
			}
			if got := legacyOf(t, d, "queue_held", "id", held.ID); got != want {
				t.Errorf("queue_held: %v; want %v", got, want)
			}
			got, err := drv.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "default", Now: 10, At: 10, Limit: 1})
			if err != nil || len(got) != 1 {
				t.Fatalf("Reserve = %v, %v", got, err)
			}
			if ok, err := drv.Fail(ctx, running.ID, got[0].Attempts, driver.Failure{Error: "refused", At: 20}); !ok || err != nil {
				t.Fatalf("Fail = %v, %v", ok, err)
			}
			if got := legacyOf(t, d, "failed_jobs", "id", running.ID); got != want {
				t.Errorf("failed_jobs: %v; want %v", got, want)
			}
			next := rated(4)
			startChain(t, drv, job(3), next)
			if got := legacyOf(t, d, "queue_steps", "job_id", next.ID); got != want {
				t.Errorf("queue_steps: %v; want %v", got, want)
			}
		})
	}
}

// TestThisBuildReadsTheSettingsTheBuildBeforeWrites: a job the build
// before migration 0023_controls stores, with its limit and rate in the
// columns of legacySettings and no controls record, is read with them by
// this build, in jobs and in failed_jobs, and keeps them through a
// retry.
func TestThisBuildReadsTheSettingsTheBuildBeforeWrites(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			drv, d := openDriver(t, name)
			ctx := context.Background()
			older := func(table string, n int, extra string, args ...any) string {
				id := job(n).ID
				cast := "?"
				if d.Dialect() == db.Postgres {
					cast = "?::uuid"
				}
				if _, err := d.ExecContext(ctx, "INSERT INTO "+table+" (id, queue, name, payload, max_attempts, backoff, timeout_ms, created_at, "+
					"rate_key, rate_max, rate_per, "+extra+") VALUES ("+cast+", 'default', 'x', '{}', 3, 'fixed:0', 0, 1, 'smtp', 5, 60000, ?, ?, ?)",
					append([]any{id}, args...)...); err != nil {
					t.Fatalf("%s: %v", table, err)
				}
				return id
			}
			want := driver.Rate{Max: 5, PerMs: 60000}
			waiting := older("jobs", 1, "limit_key, limit_max, available_at", "account:1", 2, 1)
			got, err := drv.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "default", Now: 10, At: 10, Limit: 1})
			if err != nil || len(got) != 1 || got[0].ID != waiting || got[0].Rate != want || got[0].LimitMax != 2 || got[0].Corrupt != "" {
				t.Fatalf("Reserve = %+v, %v; want the job with its limit of 2 and its rate %v", got, err, want)
			}
			failed := older("failed_jobs", 2, "attempts, error, failed_at", 3, "refused", 5)
			page, err := drv.Failed(ctx, driver.FailedKey{}, 10, false)
			if err != nil || len(page) != 1 || page[0].ID != failed || page[0].Rate != want {
				t.Fatalf("Failed = %+v, %v; want the job with its rate %v", page, err, want)
			}
			if err := drv.Retry(ctx, failed, 20); err != nil {
				t.Fatal(err)
			}
			got, err = drv.Reserve(ctx, driver.Reservation{Features: driver.FeatureRate, Queue: "default", Now: 30, At: 30, Limit: 1})
			if err != nil || len(got) != 1 || got[0].ID != failed || got[0].Rate != want {
				t.Fatalf("after its retry Reserve = %+v, %v; want the job with its rate %v", got, err, want)
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

// TestTheMigrationGivesStoredJobsTheirRecord: jobs stored before
// migration 0023_controls, in each of the four tables, read with their
// limit and rate after it.
func TestTheMigrationGivesStoredJobsTheirRecord(t *testing.T) {
	before := fstest.MapFS{}
	err := fs.WalkDir(migrations.Queue, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || path >= "0023" {
			return err
		}
		b, err := fs.ReadFile(migrations.Queue, path)
		before[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			url := dbtest.SQLiteURL(t)
			if name == "postgres" {
				url = dbtest.PostgresURL(t)
			}
			d := dbtest.Open(t, url)
			ctx := context.Background()
			if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: before}}).Migrate(ctx); err != nil {
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
			if _, err := db.NewMigrator(d, queueSets).Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			want := `{"limit_max":2,"rate_max":5,"rate_per":60000}`
			for _, row := range [][2]string{{"jobs", waiting}, {"queue_held", held}, {"failed_jobs", failed}, {"queue_steps", step}} {
				key := "id"
				if row[0] == "queue_steps" {
					key = "job_id"
				}
				var stored string
				if err := d.QueryRowContext(ctx, "SELECT controls FROM "+row[0]+" WHERE "+key+" = "+cast, row[1]).Scan(&stored); err != nil {
					t.Fatalf("%s: %v", row[0], err)
				}
				c, err := driver.ReadControls(stored)
				if got := fmt.Sprint(c.Stored()); err != nil || got != want {
					t.Errorf("%s: controls %s (%v) reads as %s; want %s", row[0], stored, err, got, want)
				}
			}
		})
	}
}

// TestAHeldJobWithItsLimitInTheRecordAloneIsLetIn: the next build writes
// a held job's limit in its controls record alone (queue_held.limit_max
// NULL); this one, running beside it through that deploy, lets such a
// job in as a job of its key leaves, and in its upkeep of held jobs.
func TestAHeldJobWithItsLimitInTheRecordAloneIsLetIn(t *testing.T) {
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
			if _, err := d.ExecContext(ctx, "UPDATE queue_held SET limit_max = NULL"); err != nil {
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
