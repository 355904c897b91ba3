// Package dbtest gives tests fresh, real databases: an SQLite file in a
// temporary folder, and a PostgreSQL schema of its own on the server named
// by NAVREE_TEST_POSTGRES_URL, dropped when the test ends.
//
//	func TestContacts(t *testing.T) {
//		dbtest.Each(t, func(t *testing.T, url string) {
//			d := dbtest.Open(t, url)
//			// ...
//		})
//	}
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
)

// PostgresEnv names the environment variable holding the URL of the
// PostgreSQL server tests use.
const PostgresEnv = "NAVREE_TEST_POSTGRES_URL"

// SQLiteURL returns the URL of a new SQLite file in a temporary folder
// removed when the test ends.
func SQLiteURL(t testing.TB) string {
	t.Helper()
	return "sqlite://" + sqlitePath(t)
}

// sqlitePath is the path of a new file test.db in a temporary folder
// removed when the test ends. The folder is not t.TempDir's, whose name
// holds the test's and so a # when two subtests share a name, and a
// database URL's path may not.
func sqlitePath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "navree-dbtest-")
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "test.db")
}

// PostgresURL creates a schema of the test's own on the server at
// NAVREE_TEST_POSTGRES_URL and returns a URL whose connections use it; the
// schema is dropped when the test ends. Without the variable the test is
// skipped (and [Main] says how many were).
func PostgresURL(t testing.TB) string {
	t.Helper()
	return testSchema(t, false)
}

// testSchema is PostgresURL, through the pooler with viaPooler.
func testSchema(t testing.TB, viaPooler bool) string {
	t.Helper()
	base, admin := server(t)
	schema := newSchemaName()
	u, err := newSchema(context.Background(), admin, base, schema, viaPooler)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		if err := dropSchema(context.Background(), admin, schema); err != nil {
			t.Errorf("dbtest: %v", err)
		}
	})
	return u
}

// PostgresDatabaseURL is PostgresURL with a database of its own rather
// than a schema, dropped when the test ends: for a test of what a
// connection keeps across statements (its prepared statements' plans),
// which the other tests' schemas, made and dropped in parallel, would
// reset (PostgreSQL drops every plan its connections keep at a CREATE or
// DROP SCHEMA in their database). It costs a copy of template1.
func PostgresDatabaseURL(t testing.TB) string {
	t.Helper()
	base, admin := server(t)
	name := newSchemaName()
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("dbtest: create database on %s: %v", config.Redact(base), err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("dbtest: %s is not a URL: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

// server is the URL of NAVREE_TEST_POSTGRES_URL and a connection to it,
// closed when the test ends; without the variable the test is skipped.
func server(t testing.TB) (string, *sql.DB) {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		skipped.Add(1)
		t.Skip(PostgresEnv + " is not set")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("dbtest: %s: %v", PostgresEnv, err)
	}
	t.Cleanup(func() { admin.Close() })
	return base, admin
}

// newSchemaName returns a new schema name, navree_test_ and 12 random hex
// digits.
func newSchemaName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "navree_test_" + hex.EncodeToString(b[:])
}

// schemaURL is the server URL base whose connections use schema.
func schemaURL(base, schema string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL: %w", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Each runs f as the subtests "sqlite" and "postgres", each with the URL
// of a fresh database.
func Each(t *testing.T, f func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, PostgresURL(t)) })
}

// Open opens and connects the database at url with the default settings
// (through the pooler of PooledEnv, with its own), and closes it when the
// test ends.
func Open(t testing.TB, url string) *db.DB {
	t.Helper()
	d, err := db.Open(configOf(url))
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Ping(context.Background()); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return d
}
