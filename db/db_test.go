package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

// secrets are the passwords, and the pieces of them, that the URLs of the
// password tests hold.
var secrets = []string{"S3cret", "S3 cret", "p@ss", "ss:w", "w/rd", "rd?#", "p%40ss", "%3Aw%2Frd", "pa/ss", "100%", "a b", `b\'c`}

func noSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s shows %q:\n%s", what, s, text)
		}
	}
}

// TestUnreachablePostgresNamesHostNotPassword: Ping and Connect on a
// closed port fail with one line naming the address, not pgx's account of
// each attempt (with TLS, then without) nor the password, whatever form
// it takes, and wrap the refusal; String names the URL without it.
func TestUnreachablePostgresNamesHostNotPassword(t *testing.T) {
	const want = "cannot connect to PostgreSQL at 127.0.0.1:1: connection refused (is the server running?)"
	tests := []struct{ give, wantName string }{
		{"postgres://bob:S3cret@127.0.0.1:1/crm", "postgres://bob:xxxxx@127.0.0.1:1/crm"},
		{"postgres://bob@127.0.0.1:1/crm?password=S3cret", "postgres://bob@127.0.0.1:1/crm?password=xxxxx"},
		{"postgres://bob@127.0.0.1:1/crm?sslmode=prefer&sslpassword=S3cret", "postgres://bob@127.0.0.1:1/crm?sslmode=prefer&sslpassword=xxxxx"},
		{"postgres://bob@127.0.0.1:1/crm?PASSWORD=S3cret", "postgres://bob@127.0.0.1:1/crm?PASSWORD=xxxxx"},
		{"postgresql://bob:p%40ss%3Aw%2Frd%3F%23%25@127.0.0.1:1/crm", "postgresql://bob:xxxxx@127.0.0.1:1/crm"},
		{"postgres://bob@127.0.0.1:1/crm?password=p%40ss%3Aw%2Frd%3F%23%25", "postgres://bob@127.0.0.1:1/crm?password=xxxxx"},
		{"postgres://bob:p?ss:w#rd@127.0.0.1:1/crm", "postgres://bob:xxxxx@127.0.0.1:1/crm"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			cfg := db.DefaultConfig()
			cfg.URL = tt.give
			d, err := db.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if got := d.String(); got != tt.wantName {
				t.Errorf("String() = %q, want %q", got, tt.wantName)
			}
			_, connectErr := d.Connect(ctx)
			for name, err := range map[string]error{"Ping": d.Ping(ctx), "Connect": connectErr} {
				if err == nil || err.Error() != want || !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("%s error:\n got %v\nwant %s", name, err, want)
				}
				noSecret(t, name+" error", fmt.Sprint(err))
			}
		})
	}
}

// TestAMissingPostgresDatabaseSaysHowToCreateIt: a database the server
// does not have (SQLSTATE 3D000) fails Ping with how to create it, its
// name quoted for the shell and for SQL when it needs to be, and without
// the password.
func TestAMissingPostgresDatabaseSaysHowToCreateIt(t *testing.T) {
	server, err := url.Parse(dbtest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("Navree's missing %d", rand.Uint64())
	cfg := db.DefaultConfig()
	cfg.URL = "postgres://postgres:S3cret@" + server.Host + "/" + url.PathEscape(name) + "?sslmode=disable"
	d, err := db.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = d.Ping(context.Background())
	want := fmt.Sprintf(`database %q does not exist on %s: create it with: createdb -h %s -p %s -U postgres '%s' (or, in psql: CREATE DATABASE "%s";)`,
		name, server.Host, server.Hostname(), server.Port(), strings.ReplaceAll(name, "'", `'\''`), name)
	var pgErr *pgconn.PgError
	if err == nil || err.Error() != want || !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		t.Fatalf("Ping error:\n got %v\nwant %s", err, want)
	}
	noSecret(t, "Ping error", err.Error())
}

// TestUnparsablePostgresURLsShowNoPassword: a URL that could make pgx
// read a piece of its password as the host, the database or a parameter
// is refused with what to encode; one pgx cannot parse fails with pgx's
// reason; a key=value string is refused. None of them shows a password.
func TestUnparsablePostgresURLsShowNoPassword(t *testing.T) {
	const allowed = "; allowed: sqlite://PATH or postgres://USER@HOST:PORT/DATABASE"
	const encode = allowed + " (percent-encode each @ and / of the user name and password, as %40 and %2F)"
	tests := []struct{ give, want string }{
		{"postgres://bob:p@ss:w/rd?#%@127.0.0.1:1/crm",
			`config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1/crm"` + encode},
		{"postgres://bob:pa/ss@127.0.0.1:1/crm",
			`config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1/crm"` + encode},
		{"postgres://bob@127.0.0.1:1/crm?password=p@ss:w/rd?#%",
			`config: invalid value for database.url: "postgres://bob@127.0.0.1:xxxxx"` + encode},
		{"postgres://bob@127.0.0.1:1/crm?password=a&b",
			`config: invalid value for database.url: "postgres://bob@127.0.0.1:1/crm?password=xxxxx"` + allowed +
				" (each query parameter must be KEY=VALUE: percent-encode & and = in a value, as %26 and %3D)"},
		{"postgres://bob:100%@127.0.0.1:1/crm",
			`config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1/crm"` + allowed +
				" (a % must start a percent-encoded byte, such as %25 for % itself)"},
		{"host=127.0.0.1 port=1 user=bob password=S3cret",
			`config: invalid value for database.url: "host=127.0.0.1 port=1 user=bob password=xxxxx"` + allowed +
				" (a key=value connection string is not accepted: write it as a postgres:// URL)"},
		{`host=127.0.0.1 port=1 password='a b\'c' user=bob`,
			`config: invalid value for database.url: "host=127.0.0.1 port=1 password=xxxxx user=bob"` + allowed +
				" (a key=value connection string is not accepted: write it as a postgres:// URL)"},
		{"postgres://bob:S3cret@127.0.0.1:1x/crm",
			`config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1x/crm"` + allowed + " (the port must be a number from 1 to 65535)"},
		{"postgres://bob:S3 cret@127.0.0.1:1/crm",
			`config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:1/crm"` + allowed +
				" (failed to parse as URL (unexpected spaces found in password, use percent-encoded spaces (%20) instead))"},
		{"postgres://bob@127.0.0.1:1/crm?password=S3cret&sslmode=bogus",
			`config: invalid value for database.url: "postgres://bob@127.0.0.1:1/crm?password=xxxxx&sslmode=bogus"` + allowed +
				" (failed to configure TLS (sslmode is invalid))"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			cfg := db.DefaultConfig()
			cfg.URL = tt.give
			_, err := db.Open(cfg)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Open error:\n got %v\nwant %s", err, tt.want)
			}
			noSecret(t, "Open error", err.Error())
		})
	}
}

// TestBadHostsAndPortsFailTheBoot: a postgres:// URL whose port is not
// one or whose IPv6 host is not closed fails as the configuration is
// read, as every invalid value does: with the key, where the value came
// from and what is allowed, and the URL without its password; not later,
// when the database is opened.
func TestBadHostsAndPortsFailTheBoot(t *testing.T) {
	const allowed = " (from env APP_DATABASE__URL); allowed: sqlite://PATH or postgres://USER@HOST:PORT/DATABASE"
	const port = allowed + " (the port must be a number from 1 to 65535)"
	const ipv6 = allowed + " (an IPv6 host must be written in brackets, as in postgres://USER@[::1]:5432/DATABASE)"
	tests := []struct{ give, want string }{
		{"postgres://bob:S3cret@127.0.0.1:notaport/x", `config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:notaport/x"` + port},
		{"postgres://bob:S3cret@127.0.0.1:0/x", `config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:0/x"` + port},
		{"postgres://bob:S3cret@127.0.0.1:65536/x", `config: invalid value for database.url: "postgres://bob:xxxxx@127.0.0.1:65536/x"` + port},
		{"postgres://bob@127.0.0.1:-1/x?password=S3cret", `config: invalid value for database.url: "postgres://bob@127.0.0.1:-1/x?password=xxxxx"` + port},
		{"postgres://bob:S3cret@[::1/x", `config: invalid value for database.url: "postgres://bob:xxxxx@[::1/x"` + ipv6},
		{"postgres://bob:S3cret@[::1:5432/x", `config: invalid value for database.url: "postgres://bob:xxxxx@[::1:5432/x"` + ipv6},
		{"postgresql://bob:S3cret@[]:5432/x", `config: invalid value for database.url: "postgresql://bob:xxxxx@[]:5432/x"` + ipv6},
		{"postgres://bob:S3cret@[::1]x:5432/x", `config: invalid value for database.url: "postgres://bob:xxxxx@[::1]x:5432/x"` + ipv6},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := config.New(config.Sources{Environ: []string{"APP_DATABASE__URL=" + tt.give}},
				config.Definition{Name: "database", Defaults: db.DefaultConfig()})
			if !errors.Is(err, config.ErrInvalid) || err.Error() != tt.want {
				t.Fatalf("config error:\n got %v\nwant %s", err, tt.want)
			}
			noSecret(t, "config error", err.Error())
		})
	}
	// A good one passes, IPv6 host included.
	for _, give := range []string{"postgres://bob:S3cret@[::1]:5432/x", "postgres://bob@[::1]/x", "postgres://bob@127.0.0.1:65535/x"} {
		if _, err := config.New(config.Sources{Environ: []string{"APP_DATABASE__URL=" + give}},
			config.Definition{Name: "database", Defaults: db.DefaultConfig()}); err != nil {
			t.Errorf("%s: %v", give, err)
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

// TestOpenDoesNoIOAndPingMakesTheFolder: building the database, as every
// command's graph may, touches nothing; connecting makes the SQLite
// file's folder.
func TestOpenDoesNoIOAndPingMakesTheFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "var", "data")
	cfg := db.DefaultConfig()
	cfg.URL = "sqlite://" + filepath.Join(dir, "app.db")
	d, err := db.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open made %s (%v)", dir, err)
	}
	if err := d.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "app.db")); err != nil {
		t.Fatalf("Ping did not make the database: %v", err)
	}
}
