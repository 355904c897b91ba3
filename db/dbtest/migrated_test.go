package dbtest

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/navree/navree/db"
)

// contacts is a migration set with a trigger that writes a row when one
// is deleted, as the queue's admission trigger does.
var contacts = db.MigrationSet{Name: "contacts", FS: fstest.MapFS{
	"0001_create_contacts.up.postgres.sql": {Data: []byte(`CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE removals (id INTEGER NOT NULL);
CREATE FUNCTION contacts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO removals (id) VALUES (OLD.id); RETURN OLD; END $$;
CREATE TRIGGER contacts_removed AFTER DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION contacts_removed();`)},
	"0001_create_contacts.up.sqlite.sql": {Data: []byte(`CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE removals (id INTEGER NOT NULL);`)},
	"0001_create_contacts.down.sql": {Data: []byte("DROP TABLE removals; DROP TABLE contacts;")},
}}

// session is what a test of the pool sees of its schema.
type session struct {
	*sql.DB
	t      *testing.T
	schema string
}

func connect(t *testing.T, url string) session {
	t.Helper()
	d := Open(t, url)
	s := session{DB: d.DB.DB, t: t}
	if strings.HasPrefix(url, "postgres") {
		s.schema = s.text("SELECT current_schema()")
	}
	return s
}

func (s session) exec(stmt string) {
	s.t.Helper()
	if _, err := s.ExecContext(context.Background(), stmt); err != nil {
		s.t.Fatalf("%s: %v", stmt, err)
	}
}

func (s session) text(query string) string {
	s.t.Helper()
	var v string
	if err := s.QueryRowContext(context.Background(), query).Scan(&v); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return v
}

// rows is how many rows contacts and removals hold, and the migrations
// navree_migrations records.
func (s session) rows() string {
	s.t.Helper()
	list := "group_concat(set_name || '/' || version)"
	if s.schema != "" {
		list = "string_agg(set_name || '/' || version, ',')"
	}
	return s.text("SELECT (SELECT count(*) FROM contacts) || ' ' || (SELECT count(*) FROM removals) || ' ' || " +
		"(SELECT " + list + " FROM navree_migrations)")
}

// needsPostgres skips t without a server to test on.
func needsPostgres(t *testing.T) {
	if os.Getenv(PostgresEnv) == "" {
		t.Skip(PostgresEnv + " is not set")
	}
}

// schemaExists reports whether the server has the schema name.
func schemaExists(t *testing.T, name string) bool {
	t.Helper()
	admin, err := sql.Open("pgx", os.Getenv(PostgresEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow("SELECT count(*) FROM pg_namespace WHERE nspname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestAMigratedSchemaIsReusedEmpty: the schema a test leaves rows in is
// the next test's, its rows deleted (those a delete trigger wrote too)
// and its migrations kept; one a test changed, analyzed or filled is
// dropped, and the next test gets a newly migrated one.
func TestAMigratedSchemaIsReusedEmpty(t *testing.T) {
	needsPostgres(t)
	var first string
	t.Run("fills", func(t *testing.T) {
		s := connect(t, MigratedPostgresURL(t, contacts))
		first = s.schema
		if got := s.rows(); got != "0 0 contacts/0001" {
			t.Fatalf("a migrated schema holds %q; want 0 0 contacts/0001", got)
		}
		s.exec("INSERT INTO contacts (id, name) VALUES (1, 'Ada'), (2, 'Grace')")
		s.exec("DELETE FROM contacts WHERE id = 1")
	})
	for _, tt := range []struct {
		name, change string
	}{
		{"adds a trigger", "CREATE TRIGGER extra AFTER INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION contacts_removed()"},
		{"adds a column", "ALTER TABLE contacts ADD COLUMN email TEXT"},
		{"adds an index", "CREATE INDEX contacts_name ON contacts (name)"},
		{"sets a table option", "ALTER TABLE contacts SET (autovacuum_enabled = off)"},
		{"analyzes", "ANALYZE contacts"},
		{"fills a megabyte", "INSERT INTO contacts (id, name) SELECT i, repeat('x', 100) FROM generate_series(1, 20000) i"},
		{"rolls a migration back", "DROP TABLE removals; DROP TABLE contacts; DELETE FROM navree_migrations"},
	} {
		var reused string
		t.Run("reuses it, then "+tt.name, func(t *testing.T) {
			s := connect(t, MigratedPostgresURL(t, contacts))
			if reused = s.schema; reused != first {
				t.Fatalf("got schema %s; want %s again", reused, first)
			}
			if got := s.rows(); got != "0 0 contacts/0001" {
				t.Fatalf("the reused schema holds %q; want 0 0 contacts/0001", got)
			}
			s.exec(tt.change)
		})
		if schemaExists(t, reused) {
			t.Fatalf("after a test that %s, its schema %s is still there", tt.name, reused)
		}
		t.Run("gets a new one", func(t *testing.T) {
			s := connect(t, MigratedPostgresURL(t, contacts))
			if s.schema == first {
				t.Fatalf("got the dropped schema %s again", first)
			}
			first = s.schema
			if got := s.rows(); got != "0 0 contacts/0001" {
				t.Fatalf("a new schema holds %q; want 0 0 contacts/0001", got)
			}
			s.exec("INSERT INTO contacts (id, name) VALUES (1, 'Ada')")
		})
	}
}

// TestPooledSchemasAreKeptApart: tests at once get schemas of their own,
// sets of one name but other files get schemas of their own, and Main
// drops the pool's schemas when the tests end.
func TestPooledSchemasAreKeptApart(t *testing.T) {
	needsPostgres(t)
	other := db.MigrationSet{Name: "contacts", FS: fstest.MapFS{
		"0001_create_contacts.up.sql":   {Data: []byte("CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT NOT NULL)")},
		"0001_create_contacts.down.sql": {Data: []byte("DROP TABLE contacts")},
	}}
	var a, b, c session
	t.Run("three at once", func(t *testing.T) {
		a = connect(t, MigratedPostgresURL(t, contacts))
		b = connect(t, MigratedPostgresURL(t, contacts))
		c = connect(t, MigratedPostgresURL(t, other))
		if a.schema == b.schema || a.schema == c.schema || b.schema == c.schema {
			t.Fatalf("schemas %s, %s and %s; want three", a.schema, b.schema, c.schema)
		}
		c.exec("INSERT INTO contacts (id, email) VALUES (1, 'ada@example.com')")
	})
	t.Run("the other set's again", func(t *testing.T) {
		s := connect(t, MigratedPostgresURL(t, other))
		if s.schema != c.schema {
			t.Fatalf("got schema %s; want %s, the other set's", s.schema, c.schema)
		}
		if got := s.text("SELECT count(*) || ' ' || coalesce(max(email), 'none') FROM contacts"); got != "0 none" {
			t.Fatalf("it holds %q", got)
		}
	})
	for _, s := range []session{a, b, c} {
		if !schemaExists(t, s.schema) {
			t.Fatalf("the pooled schema %s is gone before the tests end", s.schema)
		}
	}
	schemas.dropAll()
	for _, s := range []session{a, b, c} {
		if schemaExists(t, s.schema) {
			t.Errorf("the pooled schema %s is still there after dropAll", s.schema)
		}
	}
}

// TestMigratedSQLiteFilesAreCopies: each test gets a migrated file of its
// own, whatever the test before wrote in its copy.
func TestMigratedSQLiteFilesAreCopies(t *testing.T) {
	for i := range 2 {
		t.Run("copy", func(t *testing.T) {
			s := connect(t, MigratedSQLiteURL(t, contacts))
			if got := s.rows(); got != "0 0 contacts/0001" {
				t.Fatalf("copy %d holds %q; want 0 0 contacts/0001", i, got)
			}
			s.exec("INSERT INTO contacts (id, name) VALUES (1, 'Ada')")
		})
	}
}

// TestWithoutMainNothingIsKept: a test binary whose TestMain does not call
// Main has no one to drop a pool when its tests end, so a migrated schema
// is dropped when its test ends, and an SQLite file is migrated in place.
func TestWithoutMainNothingIsKept(t *testing.T) {
	needsPostgres(t)
	reusing.Store(false)
	defer reusing.Store(true)
	kept := len(templates.files)
	var name string
	t.Run("migrated", func(t *testing.T) {
		s := connect(t, MigratedPostgresURL(t, contacts))
		name = s.schema
		if got := s.rows(); got != "0 0 contacts/0001" {
			t.Fatalf("a migrated schema holds %q; want 0 0 contacts/0001", got)
		}
		l := connect(t, MigratedSQLiteURL(t, contacts))
		if got := l.rows(); got != "0 0 contacts/0001" {
			t.Fatalf("a migrated file holds %q; want 0 0 contacts/0001", got)
		}
	})
	if schemaExists(t, name) {
		t.Errorf("the schema %s is still there after its test", name)
	}
	for key, free := range schemas.free {
		for _, s := range free {
			if s.name == name {
				t.Errorf("without Main, the pool keeps the schema %s of %s", name, key)
			}
		}
	}
	if len(templates.files) != kept {
		t.Errorf("without Main, a template file was made: %d, not %d", len(templates.files), kept)
	}
}
