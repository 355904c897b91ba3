package db

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/uptrace/bun"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// MigrationSet is a named folder of SQL migrations that a module
// contributes, such as the queue's tables. Each migration is a file pair
//
//	0001_create_jobs.up.sql
//	0001_create_jobs.down.sql
//
// where a file for one dialect (0001_create_jobs.up.postgres.sql,
// …up.sqlite.sql) takes the place of the plain one on that database. The
// version is the number before the first underscore.
type MigrationSet struct {
	Name string
	FS   fs.FS
}

// Migrations adds a migration set to the app; migrate runs it.
func Migrations(name string, fsys fs.FS) fx.Option {
	return fx.Supply(fx.Annotated{Group: "db.migrations", Target: MigrationSet{Name: name, FS: fsys}})
}

// Migration is one migration of a set.
type Migration struct {
	Set     string
	Version string // "0001"
	Name    string // "0001_create_jobs"
	up      string
	down    string
	hasDown bool
}

// ID is the migration's set and name, "queue/0001_create_jobs".
func (m Migration) ID() string { return m.Set + "/" + m.Name }

// MigrationStatus is a migration and whether it is applied.
type MigrationStatus struct {
	Migration
	Applied   bool
	Batch     int
	AppliedAt time.Time
}

// Migrator applies and rolls back the app's migration sets. Sets run in
// name order, each set's migrations in version order. The applied ones are
// recorded in the table navree_migrations, one row per set and version,
// with the batch (one run of migrate) that applied them.
type Migrator struct {
	db   *DB
	sets []MigrationSet
}

// NewMigrator returns a Migrator of sets on d.
func NewMigrator(d *DB, sets []MigrationSet) *Migrator {
	sorted := slices.Clone(sets)
	slices.SortStableFunc(sorted, func(a, b MigrationSet) int { return cmp.Compare(a.Name, b.Name) })
	return &Migrator{db: d, sets: sorted}
}

// load reads every set's migrations for the database's dialect, in the
// order they apply.
func (m *Migrator) load() ([]Migration, error) {
	var all []Migration
	seenSet := map[string]bool{}
	for _, set := range m.sets {
		if seenSet[set.Name] {
			return nil, fmt.Errorf("migrate: migration set %q is added twice", set.Name)
		}
		seenSet[set.Name] = true
		migrations, err := loadSet(set, m.db.dialect)
		if err != nil {
			return nil, err
		}
		all = append(all, migrations...)
	}
	return all, nil
}

func loadSet(set MigrationSet, dialect Dialect) ([]Migration, error) {
	entries, err := fs.ReadDir(set.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("migrate: read set %s: %w", set.Name, err)
	}
	byName := map[string]*Migration{}
	specific := map[string]bool{} // "name.up" has a file for this dialect
	for _, e := range entries {
		file := e.Name()
		if e.IsDir() || !strings.HasSuffix(file, ".sql") {
			continue
		}
		parts := strings.Split(strings.TrimSuffix(file, ".sql"), ".")
		if len(parts) < 2 || len(parts) > 3 || (parts[1] != "up" && parts[1] != "down") {
			return nil, fmt.Errorf("migrate: %s/%s: want NAME.up.sql or NAME.down.sql (optionally NAME.up.postgres.sql, NAME.up.sqlite.sql)", set.Name, file)
		}
		name, direction := parts[0], parts[1]
		if len(parts) == 3 {
			if Dialect(parts[2]) != SQLite && Dialect(parts[2]) != Postgres {
				return nil, fmt.Errorf("migrate: %s/%s: unknown dialect %q (want sqlite or postgres)", set.Name, file, parts[2])
			}
			if Dialect(parts[2]) != dialect {
				continue
			}
		} else if specific[name+"."+direction] {
			continue
		}
		version, _, _ := strings.Cut(name, "_")
		if _, ok := new(big.Int).SetString(version, 10); !ok {
			return nil, fmt.Errorf("migrate: %s/%s: the name must start with a version number, as in 0001_create_jobs", set.Name, file)
		}
		body, err := fs.ReadFile(set.FS, file)
		if err != nil {
			return nil, fmt.Errorf("migrate: read %s/%s: %w", set.Name, file, err)
		}
		mig := byName[name]
		if mig == nil {
			mig = &Migration{Set: set.Name, Version: version, Name: name}
			byName[name] = mig
		}
		if len(parts) == 3 {
			specific[name+"."+direction] = true
		}
		if direction == "up" {
			mig.up = string(body)
		} else {
			mig.down, mig.hasDown = string(body), true
		}
	}
	var out []Migration
	versions := map[string]string{}
	for _, mig := range byName {
		if mig.up == "" {
			return nil, fmt.Errorf("migrate: %s has no up file for %s", mig.ID(), dialect)
		}
		if other, dup := versions[versionKey(mig.Version)]; dup {
			return nil, fmt.Errorf("migrate: %s and %s/%s share version %s", mig.ID(), set.Name, other, mig.Version)
		}
		versions[versionKey(mig.Version)] = mig.Name
		out = append(out, *mig)
	}
	slices.SortFunc(out, func(a, b Migration) int { return compareVersions(a.Version, b.Version) })
	return out, nil
}

func versionKey(v string) string {
	n, _ := new(big.Int).SetString(v, 10)
	return n.String()
}

func compareVersions(a, b string) int {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	return x.Cmp(y)
}

const createTable = `CREATE TABLE IF NOT EXISTS navree_migrations (
	set_name   TEXT NOT NULL,
	version    TEXT NOT NULL,
	name       TEXT NOT NULL,
	batch      INTEGER NOT NULL,
	applied_at BIGINT NOT NULL,
	PRIMARY KEY (set_name, version)
)`

type appliedRow struct {
	Set       string
	Version   string
	Name      string
	Batch     int
	AppliedAt int64
}

// locked runs fn in one transaction that holds the migration lock: on
// PostgreSQL an advisory lock of the schema, on SQLite the write lock
// (BEGIN IMMEDIATE). Two processes migrating at once take turns, and the
// second finds the work done.
func (m *Migrator) locked(ctx context.Context, fn func(ctx context.Context, rows []appliedRow) error) error {
	return m.db.Transaction(ctx, func(ctx context.Context) error {
		tx, err := UnitOfWorkFrom(ctx).Tx(ctx)
		if err != nil {
			return err
		}
		if m.db.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.navree_migrations'))"); err != nil {
				return fmt.Errorf("migrate: lock: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, createTable); err != nil {
			return fmt.Errorf("migrate: create navree_migrations: %w", err)
		}
		rows, err := readApplied(ctx, tx)
		if err != nil {
			return err
		}
		return fn(ctx, rows)
	})
}

// readApplied reads the rows of navree_migrations.
func readApplied(ctx context.Context, q bun.IConn) ([]appliedRow, error) {
	var rows []appliedRow
	sqlRows, err := q.QueryContext(ctx, "SELECT set_name, version, name, batch, applied_at FROM navree_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: read navree_migrations: %w", err)
	}
	defer sqlRows.Close()
	for sqlRows.Next() {
		var r appliedRow
		if err := sqlRows.Scan(&r.Set, &r.Version, &r.Name, &r.Batch, &r.AppliedAt); err != nil {
			return nil, fmt.Errorf("migrate: read navree_migrations: %w", err)
		}
		rows = append(rows, r)
	}
	if err := sqlRows.Err(); err != nil {
		return nil, fmt.Errorf("migrate: read navree_migrations: %w", err)
	}
	return rows, nil
}

// Pending returns the migrations of the app that have not run on the
// database, in the order they apply: all of them on a database migrate
// never ran on. Unlike [Migrator.Status] it only reads: it creates no
// table and takes no lock.
func (m *Migrator) Pending(ctx context.Context) ([]Migration, error) {
	all, err := m.load()
	if err != nil {
		return nil, err
	}
	exists := "SELECT to_regclass('navree_migrations') IS NOT NULL"
	if m.db.dialect == SQLite {
		exists = "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'navree_migrations')"
	}
	var found bool
	if err := m.db.QueryRowContext(ctx, exists).Scan(&found); err != nil {
		return nil, fmt.Errorf("migrate: read navree_migrations: %w", err)
	}
	if !found {
		return all, nil
	}
	rows, err := readApplied(ctx, m.db.DB)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, r := range rows {
		done[r.Set+"/"+r.Version] = true
	}
	return slices.DeleteFunc(all, func(mig Migration) bool { return done[mig.Set+"/"+mig.Version] }), nil
}

// PendingError is the error of a command that needs the app's tables on a
// database where Count of the app's migrations have not run.
type PendingError struct {
	Count    int
	Database string         // the database's URL without its password
	Run      app.Invocation // how the user runs the app's commands
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("%s not run on this database (%s): run %q first", migrationsHave(e.Count), e.Database, string(e.Run)+" migrate")
}

// migrationsHave is "1 migration has" or "N migrations have".
func migrationsHave(n int) string {
	if n == 1 {
		return "1 migration has"
	}
	return fmt.Sprintf("%d migrations have", n)
}

// Migrated is what a command takes among its services when it needs the
// app's tables, as queue:work and schedule:work do, to check first, before
// it prints or logs a line, that every migration of the app has run
// (instead of logging a missing table every second). Its zero value,
// which an app without [Module] gives an optional field, checks nothing.
type Migrated struct {
	m   *Migrator
	run app.Invocation
}

type migratedIn struct {
	fx.In
	Migrator *Migrator
	Run      app.Invocation
}

func newMigrated(p migratedIn) Migrated { return Migrated{p.Migrator, p.Run} }

// Check returns a [*PendingError] when a migration of the app has not run
// on the database.
func (c Migrated) Check(ctx context.Context) error {
	if c.m == nil {
		return nil
	}
	pending, err := c.m.Pending(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	return &PendingError{Count: len(pending), Database: c.m.db.String(), Run: c.run}
}

// warnPending logs, when serve starts, that migrations have not run:
// serve serves all the same (its pages that need no table work).
func warnPending(ctx context.Context, m *Migrator, run app.Invocation, logger *slog.Logger) error {
	pending, err := m.Pending(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	logger.WarnContext(ctx, migrationsHave(len(pending))+" not run on this database: the requests that need their tables will fail",
		"logger", "navree.db", "database", m.db.String(), "run", string(run)+" migrate")
	return nil
}

// Migrate applies every pending migration in one transaction, as one
// batch, and returns them; none when everything is applied.
func (m *Migrator) Migrate(ctx context.Context) ([]Migration, error) {
	return m.MigrateWithProgress(ctx, nil)
}

// MigrateWithProgress is Migrate, calling progress, when it is not nil,
// before each migration it applies, with the migration and how many of
// the pending ones are applied before it (done of total). The migrate
// command draws its status line from it.
func (m *Migrator) MigrateWithProgress(ctx context.Context, progress func(next Migration, done, total int)) ([]Migration, error) {
	all, err := m.load()
	if err != nil {
		return nil, err
	}
	var applied []Migration
	err = m.locked(ctx, func(ctx context.Context, rows []appliedRow) error {
		done := map[string]bool{}
		batch := 0
		for _, r := range rows {
			done[r.Set+"/"+r.Version] = true
			batch = max(batch, r.Batch)
		}
		tx, _ := UnitOfWorkFrom(ctx).Tx(ctx)
		now := time.Now().UnixMilli()
		var pending []Migration
		for _, mig := range all {
			if !done[mig.Set+"/"+mig.Version] {
				pending = append(pending, mig)
			}
		}
		for i, mig := range pending {
			if progress != nil {
				progress(mig, i, len(pending))
			}
			if _, err := tx.Tx.ExecContext(ctx, mig.up); err != nil {
				return fmt.Errorf("migrate: %s: %w", mig.ID(), err)
			}
			if _, err := tx.NewRaw("INSERT INTO navree_migrations (set_name, version, name, batch, applied_at) VALUES (?, ?, ?, ?, ?)",
				mig.Set, mig.Version, mig.Name, batch+1, now).Exec(ctx); err != nil {
				return fmt.Errorf("migrate: record %s: %w", mig.ID(), err)
			}
			applied = append(applied, mig)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// Rollback undoes the last batch, newest migration first, in one
// transaction, and returns what it undid; none when nothing is applied.
func (m *Migrator) Rollback(ctx context.Context) ([]Migration, error) {
	all, err := m.load()
	if err != nil {
		return nil, err
	}
	known := map[string]Migration{}
	for _, mig := range all {
		known[mig.Set+"/"+mig.Version] = mig
	}
	var undone []Migration
	err = m.locked(ctx, func(ctx context.Context, rows []appliedRow) error {
		batch := 0
		for _, r := range rows {
			batch = max(batch, r.Batch)
		}
		var last []Migration
		for _, r := range rows {
			if r.Batch != batch {
				continue
			}
			mig, ok := known[r.Set+"/"+r.Version]
			if !ok {
				return fmt.Errorf("migrate: cannot roll back %s/%s: this app has no such migration", r.Set, r.Name)
			}
			if !mig.hasDown {
				return fmt.Errorf("migrate: cannot roll back %s: it has no down file", mig.ID())
			}
			last = append(last, mig)
		}
		slices.SortFunc(last, func(a, b Migration) int { // the reverse of the order they applied in
			return cmp.Or(cmp.Compare(b.Set, a.Set), compareVersions(b.Version, a.Version))
		})
		tx, _ := UnitOfWorkFrom(ctx).Tx(ctx)
		for _, mig := range last {
			if strings.TrimSpace(mig.down) != "" {
				if _, err := tx.Tx.ExecContext(ctx, mig.down); err != nil {
					return fmt.Errorf("migrate: roll back %s: %w", mig.ID(), err)
				}
			}
			if _, err := tx.NewRaw("DELETE FROM navree_migrations WHERE set_name = ? AND version = ?", mig.Set, mig.Version).Exec(ctx); err != nil {
				return fmt.Errorf("migrate: roll back %s: %w", mig.ID(), err)
			}
			undone = append(undone, mig)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return undone, nil
}

// Status lists every migration of the app, applied or pending, in the
// order they apply.
func (m *Migrator) Status(ctx context.Context) ([]MigrationStatus, error) {
	all, err := m.load()
	if err != nil {
		return nil, err
	}
	var out []MigrationStatus
	err = m.locked(ctx, func(ctx context.Context, rows []appliedRow) error {
		applied := map[string]appliedRow{}
		for _, r := range rows {
			applied[r.Set+"/"+r.Version] = r
		}
		for _, mig := range all {
			r, ok := applied[mig.Set+"/"+mig.Version]
			st := MigrationStatus{Migration: mig, Applied: ok}
			if ok {
				st.Batch, st.AppliedAt = r.Batch, time.UnixMilli(r.AppliedAt).UTC()
			}
			out = append(out, st)
		}
		return nil
	})
	return out, err
}

func migrateCommands() []app.Command {
	return []app.Command{
		{
			Name:  "migrate",
			Usage: "Apply every pending migration",
			Action: app.Uses(func(c *cli.Context, m *Migrator) error {
				progress := term.NewProgress(c.App.ErrWriter, "Migrating", 0)
				applied, err := m.MigrateWithProgress(c.Context, func(next Migration, done, total int) {
					progress.Show(fmt.Sprintf("%s (%d of %d)", next.ID(), done+1, total))
				})
				progress.Done()
				if err != nil {
					return err
				}
				if len(applied) == 0 {
					fmt.Fprintln(c.App.Writer, "Nothing to migrate.")
				}
				for _, mig := range applied {
					fmt.Fprintf(c.App.Writer, "Migrated %s\n", mig.ID())
				}
				return nil
			}),
		},
		{
			Name:  "migrate:status",
			Usage: "List the migrations and whether each is applied",
			Action: app.Uses(func(c *cli.Context, m *Migrator) error {
				list, err := m.Status(c.Context)
				if err != nil {
					return err
				}
				if len(list) == 0 {
					fmt.Fprintln(c.App.Writer, "This app has no migrations.")
					return nil
				}
				w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "SET\tMIGRATION\tSTATUS")
				for _, st := range list {
					status := "pending"
					if st.Applied {
						status = fmt.Sprintf("applied (batch %d, %s UTC)", st.Batch, st.AppliedAt.Format(time.DateTime))
					}
					fmt.Fprintf(w, "%s\t%s\t%s\n", st.Set, st.Name, status)
				}
				return w.Flush()
			}),
		},
		{
			Name:  "migrate:rollback",
			Usage: "Undo the last batch of migrations",
			Action: app.Uses(func(c *cli.Context, m *Migrator) error {
				undone, err := m.Rollback(c.Context)
				if err != nil {
					return err
				}
				if len(undone) == 0 {
					fmt.Fprintln(c.App.Writer, "Nothing to roll back.")
				}
				for _, mig := range undone {
					fmt.Fprintf(c.App.Writer, "Rolled back %s\n", mig.ID())
				}
				return nil
			}),
		},
	}
}
