package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

// TestPoolerSettingsAreCheckedAtBoot: database.pooler takes none or
// transaction, for PostgreSQL only; database.listen_url a postgres://
// URL, shown without its password, for PostgreSQL only.
func TestPoolerSettingsAreCheckedAtBoot(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"APP_DATABASE__URL=postgres://bob@db/crm", "APP_DATABASE__POOLER=session"},
			`config: invalid value for database.pooler: "session" (from env APP_DATABASE__POOLER); allowed: one of none, transaction`},
		{[]string{"APP_DATABASE__POOLER=transaction"},
			`config: invalid value for database.pooler: "transaction" (from env APP_DATABASE__POOLER); allowed: none: a pooler stands before PostgreSQL only, and database.url is not a postgres:// URL`},
		{[]string{"APP_DATABASE__LISTEN_URL=postgres://bob:S3cret@db/crm"},
			`config: invalid value for database.listen_url: "postgres://bob:xxxxx@db/crm" (from env APP_DATABASE__LISTEN_URL); allowed: empty: workers listen for dispatches on PostgreSQL only, and database.url is not a postgres:// URL`},
		{[]string{"APP_DATABASE__URL=postgres://bob@pooler/crm", "APP_DATABASE__LISTEN_URL=sqlite://var/app.db"},
			`config: invalid value for database.listen_url: "sqlite://var/app.db" (from env APP_DATABASE__LISTEN_URL); allowed: a postgres:// URL of the database of database.url, reaching the server itself`},
		{[]string{"APP_DATABASE__URL=postgres://bob@pooler/crm", "APP_DATABASE__LISTEN_URL=postgres://bob:S3cret@db:notaport/crm"},
			`config: invalid value for database.listen_url: "postgres://bob:xxxxx@db:notaport/crm" (from env APP_DATABASE__LISTEN_URL); allowed: a postgres:// URL of the database of database.url, reaching the server itself`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.env, " "), func(t *testing.T) {
			_, err := config.New(config.Sources{Environ: tt.env}, config.Definition{Name: "database", Defaults: db.DefaultConfig()})
			if !errors.Is(err, config.ErrInvalid) || err.Error() != tt.want {
				t.Fatalf("config error:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
	good := []string{"APP_DATABASE__URL=postgres://bob@pooler:6432/crm", "APP_DATABASE__POOLER=transaction", "APP_DATABASE__LISTEN_URL=postgres://bob@db:5432/crm"}
	if _, err := config.New(config.Sources{Environ: good}, config.Definition{Name: "database", Defaults: db.DefaultConfig()}); err != nil {
		t.Fatal(err)
	}
}

// TestConnectThroughATransactionPooler: with database.pooler
// "transaction", Connect, which holds a session for long (LISTEN), fails
// with ErrNoSession until database.listen_url names a URL of its own, and
// then connects there; the pool's connections stay the pooler's.
func TestConnectThroughATransactionPooler(t *testing.T) {
	ctx := context.Background()
	url := dbtest.PostgresURL(t)
	cfg := db.DefaultConfig()
	cfg.URL, cfg.Pooler = url, "transaction"
	d, err := db.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.Pooled() {
		t.Fatal("Pooled() = false with database.pooler transaction")
	}
	if _, err := d.Connect(ctx); !errors.Is(err, db.ErrNoSession) || !strings.Contains(err.Error(), "database.listen_url is empty") {
		t.Fatalf("Connect = %v; want db.ErrNoSession", err)
	}
	cfg.ListenURL = "postgres://bob:S3cret@127.0.0.1:1/crm"
	l, err := db.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("Ping through database.url: %v", err)
	}
	const want = "cannot connect to PostgreSQL at 127.0.0.1:1: connection refused (is the server running?)"
	if _, err := l.Connect(ctx); err == nil || err.Error() != want {
		t.Fatalf("Connect = %v; want %s (database.listen_url's address, no password)", err, want)
	}
}
