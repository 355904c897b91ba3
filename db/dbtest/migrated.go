package dbtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/db"
)

// MigratedSQLiteURL is [SQLiteURL] with the sets' migrations applied, as
// db.Migrator's Migrate leaves them. Under [Main], the first test of a
// test binary to ask for the sets migrates a template file and the others
// get a copy of it, which takes a millisecond where migrating takes tens.
func MigratedSQLiteURL(t testing.TB, sets ...db.MigrationSet) string {
	t.Helper()
	if !reusing.Load() {
		url := SQLiteURL(t)
		if err := migrate(url, sets); err != nil {
			t.Fatalf("dbtest: %v", err)
		}
		return url
	}
	key, err := setsKey(sets)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	template, err := templates.file(key, sets)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	path := sqlitePath(t)
	if err := copyFile(template, path); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return "sqlite://" + path
}

// MigratedPostgresURL is [PostgresURL] with the sets' migrations applied,
// as db.Migrator's Migrate leaves them, in a schema of the test's own.
//
// Migrating a schema costs the server about 0.15 s of CPU, which many
// tests at once turn into seconds, so under [Main] the schemas are
// reused: when a test ends, the rows of its schema's tables are deleted
// and the schema waits in this test binary's pool for the next test that
// asks for the same sets. A schema a test changed (a table, column, index, constraint,
// function or trigger added, altered or dropped; a migration applied or
// rolled back), analyzed, or filled beyond a megabyte is dropped instead,
// so every test starts as on a freshly migrated schema. [Main] drops the
// pool's schemas when the tests end.
func MigratedPostgresURL(t testing.TB, sets ...db.MigrationSet) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		skipped.Add(1)
		t.Skip(PostgresEnv + " is not set")
	}
	key, err := setsKey(sets)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	s, err := schemas.take(base, key, sets)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		if err := schemas.give(s); err != nil {
			t.Errorf("dbtest: %v", err)
		}
	})
	return s.url
}

// EachMigrated is [Each] on databases with the sets' migrations applied:
// [MigratedSQLiteURL] and [MigratedPostgresURL].
func EachMigrated(t *testing.T, sets []db.MigrationSet, f func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, MigratedSQLiteURL(t, sets...)) })
	t.Run("postgres", func(t *testing.T) { f(t, MigratedPostgresURL(t, sets...)) })
}

// setsKey names what migrating sets makes: each set's name and a hash of
// its files, in the order the Migrator applies them, so two sets of one
// name with other files are told apart.
func setsKey(sets []db.MigrationSet) (string, error) {
	sorted := slices.Clone(sets)
	slices.SortStableFunc(sorted, func(a, b db.MigrationSet) int { return strings.Compare(a.Name, b.Name) })
	var key []string
	for _, set := range sorted {
		h := sha256.New()
		err := fs.WalkDir(set.FS, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(set.FS, path)
			fmt.Fprintf(h, "%s %d\n", path, len(data))
			h.Write(data)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("migration set %s: %w", set.Name, err)
		}
		key = append(key, set.Name+":"+hex.EncodeToString(h.Sum(nil)[:8]))
	}
	return strings.Join(key, ","), nil
}

// migrate applies the sets on the database at url.
func migrate(url string, sets []db.MigrationSet) error {
	d, err := db.Open(configOf(url))
	if err != nil {
		return err
	}
	defer d.Close()
	_, err = db.NewMigrator(d, sets).Migrate(context.Background())
	return err
}

// templates are the migrated SQLite files of a test binary, one per key,
// in a folder of its own that [Main] removes.
var templates templateFiles

type templateFiles struct {
	mu    sync.Mutex
	dir   string
	files map[string]string
}

// file returns the path of the template file of key, migrating it first
// if the binary has none yet.
func (tf *templateFiles) file(key string, sets []db.MigrationSet) (string, error) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if path, ok := tf.files[key]; ok {
		return path, nil
	}
	if tf.dir == "" {
		dir, err := os.MkdirTemp("", "navree-dbtest-")
		if err != nil {
			return "", err
		}
		tf.dir, tf.files = dir, map[string]string{}
	}
	path := filepath.Join(tf.dir, fmt.Sprintf("template-%d.db", len(tf.files)))
	if err := migrate("sqlite://"+path, sets); err != nil {
		return "", err
	}
	// Closing the last connection checkpoints the write-ahead log into
	// the file and removes it; a copy of the file alone would miss
	// what a log left behind holds.
	if _, err := os.Stat(path + "-wal"); err == nil {
		return "", fmt.Errorf("the template %s kept its write-ahead log after closing", path)
	}
	tf.files[key] = path
	return path, nil
}

// removeAll removes the template files.
func (tf *templateFiles) removeAll() {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if tf.dir != "" {
		os.RemoveAll(tf.dir)
		tf.dir, tf.files = "", nil
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// schemas is the pool of a test binary's migrated PostgreSQL schemas.
var schemas schemaPool

type schemaPool struct {
	mu    sync.Mutex
	admin *sql.DB              // on the server at NAVREE_TEST_POSTGRES_URL, opened on first use
	free  map[string][]*schema // by key
}

// schema is one migrated schema of the pool.
type schema struct {
	name   string
	key    string
	url    string   // NAVREE_TEST_POSTGRES_URL with the schema as search_path
	tables []string // its tables, but navree_migrations
	shape  string   // shapeQuery's answer when it was migrated
}

// take returns a free schema of key, or migrates a new one.
func (p *schemaPool) take(base, key string, sets []db.MigrationSet) (*schema, error) {
	p.mu.Lock()
	if p.admin == nil {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			p.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", PostgresEnv, err)
		}
		p.admin, p.free = admin, map[string][]*schema{}
	}
	if free := p.free[key]; len(free) > 0 {
		s := free[len(free)-1]
		p.free[key] = free[:len(free)-1]
		p.mu.Unlock()
		return s, nil
	}
	admin := p.admin
	p.mu.Unlock()

	ctx := context.Background()
	name := newSchemaName()
	s := &schema{name: name, key: key}
	var err error
	if s.url, err = newSchema(ctx, admin, base, name, false); err == nil {
		err = migrate(s.url, sets)
	}
	if err == nil {
		s.shape, _, err = shapeOf(ctx, admin, name)
	}
	if err == nil {
		s.tables, err = tablesOf(ctx, admin, name)
	}
	if err != nil {
		dropSchema(ctx, admin, name)
		return nil, fmt.Errorf("migrate schema %s: %w", name, err)
	}
	return s, nil
}

// give deletes the rows of s's tables and puts s back in the pool, or
// drops it if the test changed it in a way deleting rows does not undo,
// or if no Main will drop the pool's schemas.
func (p *schemaPool) give(s *schema) error {
	ctx := context.Background()
	if reusing.Load() && p.reset(ctx, s) {
		p.mu.Lock()
		p.free[s.key] = append(p.free[s.key], s)
		p.mu.Unlock()
		return nil
	}
	return dropSchema(ctx, p.admin, s.name)
}

// maxReusedBytes is how large a schema's tables and indexes may have
// grown, deleted rows included, for it to be reused: the dead rows of a
// test that filled it would slow the next test's scans and change its
// plans.
const maxReusedBytes = 1 << 20

// reset deletes the rows of s's tables and reports whether s is as it was
// migrated again. Deleting a row can fire a trigger that writes another
// (a deleted job admits a held one), so it deletes until a round finds
// nothing left.
func (p *schemaPool) reset(ctx context.Context, s *schema) bool {
	shape, size, err := shapeOf(ctx, p.admin, s.name)
	if err != nil || shape != s.shape || size > maxReusedBytes {
		return false
	}
	var deletes []string
	for i, table := range s.tables {
		deletes = append(deletes, fmt.Sprintf("d%d AS (DELETE FROM %s.%q RETURNING 1)", i, s.name, table))
	}
	var counts []string
	for i := range s.tables {
		counts = append(counts, fmt.Sprintf("(SELECT count(*) FROM d%d)", i))
	}
	stmt := "WITH " + strings.Join(deletes, ", ") + " SELECT " + strings.Join(counts, " + ")
	for range 4 {
		deleted, err := p.deleteRows(ctx, s.name, stmt)
		if err != nil {
			return false
		}
		if deleted == 0 {
			return true
		}
	}
	return false
}

// deleteRows runs stmt, which deletes rows and counts them, in the schema
// name: the triggers it fires name the tables of their own schema
// unqualified, as migrations write them.
func (p *schemaPool) deleteRows(ctx context.Context, name, stmt string) (int64, error) {
	tx, err := p.admin.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var deleted int64
	if _, err := tx.ExecContext(ctx, "SET LOCAL search_path TO "+name); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, stmt).Scan(&deleted); err != nil {
		return 0, err
	}
	return deleted, tx.Commit()
}

// dropAll drops the pool's free schemas and closes its connections.
func (p *schemaPool) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.admin == nil {
		return
	}
	for _, free := range p.free {
		for _, s := range free {
			dropSchema(context.Background(), p.admin, s.name)
		}
	}
	p.admin.Close()
	p.admin, p.free = nil, nil
}

// shapeQuery describes what the schema $1 holds but rows, as a hash: its
// relations with their kinds, options and whether they were analyzed,
// columns, indexes, constraints, functions and triggers, and its
// sequences' states; and how large its tables and their indexes are.
// (The views pg_indexes and pg_stats would say some of it at several
// times the cost.)
const shapeQuery = `WITH rel AS (SELECT oid, relname, relkind, reloptions, reltuples FROM pg_class WHERE relnamespace = $1::regnamespace)
SELECT md5(coalesce(string_agg(x, E'\n' ORDER BY x), '')),
  (SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM rel WHERE relkind IN ('r', 'p', 'm'))
FROM (
  SELECT 'r ' || relname || ' ' || relkind::text || ' ' || coalesce(array_to_string(reloptions, ','), '') || ' ' || (reltuples >= 0)::text AS x
    FROM rel
  UNION ALL SELECT 'a ' || rel.relname || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' ||
    a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT 'i ' || pg_get_indexdef(i.indexrelid) FROM rel JOIN pg_index i ON i.indexrelid = rel.oid
  UNION ALL SELECT 'c ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = $1::regnamespace
  UNION ALL SELECT 'f ' || proname || ' ' || md5(pg_get_functiondef(oid)) FROM pg_proc WHERE pronamespace = $1::regnamespace
  UNION ALL SELECT 't ' || tg.tgname || ' ' || tg.tgenabled::text || ' ' || md5(pg_get_triggerdef(tg.oid))
    FROM rel JOIN pg_trigger tg ON tg.tgrelid = rel.oid
  UNION ALL SELECT 's ' || relname || ' ' || coalesce(pg_sequence_last_value(oid)::text, '') FROM rel WHERE relkind = 'S'
) s`

// shapeOf is shapeQuery's answers for the schema name, with the
// migrations it records added to the shape.
func shapeOf(ctx context.Context, admin *sql.DB, name string) (shape string, size int64, err error) {
	var migrations string
	if err := admin.QueryRowContext(ctx, shapeQuery, name).Scan(&shape, &size); err != nil {
		return "", 0, fmt.Errorf("read schema %s: %w", name, err)
	}
	if err := admin.QueryRowContext(ctx, "SELECT coalesce(string_agg(set_name || '/' || version, ',' ORDER BY set_name, version), '') FROM "+
		name+".navree_migrations").Scan(&migrations); err != nil {
		return "", 0, fmt.Errorf("read schema %s: %w", name, err)
	}
	return shape + " " + migrations, size, nil
}

// tablesOf lists the tables of the schema name but navree_migrations.
func tablesOf(ctx context.Context, admin *sql.DB, name string) ([]string, error) {
	rows, err := admin.QueryContext(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'navree_migrations' ORDER BY tablename", name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var table string
		if err := rows.Scan(&table); err != nil {
			return nil, err
		}
		tables = append(tables, table)
	}
	return tables, rows.Err()
}
