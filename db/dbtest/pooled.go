package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
)

// PoolerEnv names the environment variable holding the URL of a pooler in
// transaction mode (PgBouncer's pool_mode = transaction) in front of the
// server of NAVREE_TEST_POSTGRES_URL, which lets in any user of the server
// (PgBouncer: auth_user, and a database entry * for every database).
const PoolerEnv = "NAVREE_TEST_PGBOUNCER_URL"

// PooledEnv names the environment variable that, set to 1, makes
// PostgresURL and MigratedPostgresURL return URLs through the pooler of
// PoolerEnv, with database.pooler "transaction" and database.listen_url
// the server itself where Open opens them (see PooledSuite).
const PooledEnv = "NAVREE_TEST_POSTGRES_POOLED"

// pooled reports whether this test binary reaches PostgreSQL through the
// pooler.
func pooled() bool { return os.Getenv(PooledEnv) == "1" }

// listenURLs maps the role of each URL through the pooler that newSchema
// returned to the URL of its schema on the server itself.
var listenURLs sync.Map

// PoolerURL returns the URL of PoolerEnv; without it the test is skipped
// (and [Main] says how many were).
func PoolerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(PoolerEnv)
	if u == "" {
		skipped.Add(1)
		t.Skip(PoolerEnv + " is not set")
	}
	return u
}

// PooledPostgresURL is PostgresURL through the pooler of PoolerEnv,
// whatever PooledEnv says; Open opens it with database.pooler
// "transaction" and database.listen_url the schema on the server itself.
// Without the variable the test is skipped (and [Main] says how many
// were).
func PooledPostgresURL(t testing.TB) string {
	t.Helper()
	PoolerURL(t)
	return testSchema(t, true)
}

// ListenURL is the URL database.listen_url takes for u, a URL of
// PooledPostgresURL (or of the pooler under PooledEnv): the schema on
// the server itself; "" for any other.
func ListenURL(u string) string { return configOf(u).ListenURL }

// newSchema creates the schema name on the server base, with admin, and
// returns a URL whose connections use it. Through the pooler (viaPooler,
// or PooledEnv), which a search_path given at connect would not pass,
// the schema belongs to a role of the same name whose search_path it is,
// and the URL logs in as that role.
func newSchema(ctx context.Context, admin *sql.DB, base, name string, viaPooler bool) (string, error) {
	if !viaPooler && !pooled() {
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
			return "", fmt.Errorf("create schema on %s: %w", config.Redact(base), err)
		}
		return schemaURL(base, name)
	}
	pooler := os.Getenv(PoolerEnv)
	if pooler == "" {
		return "", fmt.Errorf("%s is 1 and %s is not set", PooledEnv, PoolerEnv)
	}
	// A superuser, as the tests' user of the server is: some read the
	// catalogs or set a table's statistics.
	for _, stmt := range []string{"CREATE ROLE " + name + " LOGIN SUPERUSER", "CREATE SCHEMA " + name + " AUTHORIZATION " + name,
		"ALTER ROLE " + name + " SET search_path = " + name} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			return "", fmt.Errorf("%s on %s: %w", stmt, config.Redact(base), err)
		}
	}
	direct, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL: %w", PostgresEnv, err)
	}
	through, err := url.Parse(pooler)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL: %w", PoolerEnv, err)
	}
	direct.User, through.User, through.Path = url.User(name), url.User(name), direct.Path
	listenURLs.Store(name, direct.String())
	return through.String(), nil
}

// dropSchema drops the schema name, and through the pooler its role.
func dropSchema(ctx context.Context, admin *sql.DB, name string) error {
	if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", name, err)
	}
	if _, ok := listenURLs.Load(name); ok {
		if _, err := admin.ExecContext(ctx, "DROP ROLE IF EXISTS "+name); err != nil {
			return fmt.Errorf("drop role %s: %w", name, err)
		}
	}
	return nil
}

// configOf is the configuration that opens raw: the defaults, and for a
// URL through the pooler (or through a proxy of a test in front of it),
// database.pooler "transaction" and database.listen_url the server
// itself.
func configOf(raw string) db.Config {
	cfg := db.DefaultConfig()
	cfg.URL = raw
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if direct, ok := listenURLs.Load(u.User.Username()); ok {
			cfg.Pooler, cfg.ListenURL = "transaction", direct.(string)
		}
	}
	return cfg
}
