package db_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

func TestSQLiteSettingsOnEveryConnection(t *testing.T) {
	for _, tt := range []struct{ sync, want string }{{"normal", "1"}, {"full", "2"}} {
		t.Run(tt.sync, func(t *testing.T) {
			cfg := db.DefaultConfig()
			cfg.URL = "sqlite://" + filepath.Join(t.TempDir(), "nested", "folder", "app.db")
			cfg.SQLiteSynchronous = tt.sync
			d, err := db.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			if err := d.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			// Hold three connections at once so each is checked, not one reused.
			var conns []interface{ Close() error }
			for range 3 {
				conn, err := d.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, conn)
				for pragma, want := range map[string]string{
					"journal_mode": "wal", "synchronous": tt.want, "busy_timeout": "5000", "foreign_keys": "1",
				} {
					var got string
					if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
					}
				}
			}
			for _, c := range conns {
				c.Close()
			}
		})
	}
}

func TestBadURLsFailWithTheKeyAndNoPassword(t *testing.T) {
	for _, give := range []string{"mysql://root:hunter2@db/app", "sqlite://", "redis://x", "var/app.db"} {
		cfg := db.DefaultConfig()
		cfg.URL = give
		_, err := db.Open(cfg)
		if !errors.Is(err, config.ErrInvalid) {
			t.Fatalf("Open(%q) error = %v, want config.ErrInvalid", give, err)
		}
		if !strings.Contains(err.Error(), "database.url") || !strings.Contains(err.Error(), "sqlite://PATH or postgres://") {
			t.Errorf("Open(%q) error = %v, want the key and what is allowed", give, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

func TestUnreachablePostgresNamesHostNotPassword(t *testing.T) {
	cfg := db.DefaultConfig()
	cfg.URL = "postgres://app:hunter2@127.0.0.1:1/crm?connect_timeout=2"
	d, err := db.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	_, connectErr := d.Connect(ctx)
	for name, err := range map[string]error{"Ping": d.Ping(ctx), "Connect": connectErr} {
		if err == nil {
			t.Fatalf("%s succeeded on a closed port", name)
		}
		if !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%s error = %v, want the host named and no password", name, err)
		}
	}
}

func TestNotADatabaseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not sqlite ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := db.DefaultConfig()
	cfg.URL = "sqlite://" + path
	d, err := db.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a database") {
		t.Fatalf("Ping error = %v, want one naming the file and saying it is not a database", err)
	}
}

func TestConnectOpensAConnectionOutsideThePool(t *testing.T) {
	ctx := context.Background()
	dbtest.Each(t, func(t *testing.T, url string) {
		cfg := db.DefaultConfig()
		cfg.URL = url
		cfg.MaxOpenConns = 1
		d, err := db.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if d.Dialect() == db.SQLite {
			if _, err := d.Connect(ctx); !errors.Is(err, db.ErrNotPostgres) {
				t.Fatalf("Connect on SQLite: error = %v, want db.ErrNotPostgres", err)
			}
			return
		}
		// The pool's one connection is taken: Connect must not wait for it.
		held, err := d.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		conn, err := d.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// It uses the URL's settings: the test's own schema.
		var path string
		if err := conn.QueryRow(ctx, "SHOW search_path").Scan(&path); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(path, "navree_test_") {
			t.Fatalf("search_path = %q, want the URL's schema", path)
		}
		if n := d.Stats().OpenConnections; n != 1 {
			t.Fatalf("pool has %d open connections, want 1 (Connect's is its own)", n)
		}
	})
}

func TestRedact(t *testing.T) {
	if got := db.Redact("postgres://app:hunter2@db:5432/crm"); got != "postgres://app:xxxxx@db:5432/crm" {
		t.Fatalf("Redact = %q", got)
	}
}

// createNotes makes the table the unit-of-work tests write to.
func createNotes(t *testing.T, d *db.DB) {
	t.Helper()
	if _, err := d.ExecContext(context.Background(), "CREATE TABLE notes (body TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
}

func countNotes(t *testing.T, d *db.DB) int {
	t.Helper()
	var n int
	if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM notes").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// addNote writes through the unit of work on ctx.
func addNote(ctx context.Context, d *db.DB, body string) error {
	q, err := d.Querier(ctx)
	if err != nil {
		return err
	}
	_, err = q.NewRaw("INSERT INTO notes (body) VALUES (?)", body).Exec(ctx)
	return err
}
