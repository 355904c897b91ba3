package dbdriver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/driver"
)

// TestTheDriverSuiteThroughATransactionPooler runs this package's
// PostgreSQL tests again through the pooler of dbtest.PoolerEnv (in CI,
// PgBouncer in transaction mode with a pool of 5), each schema's
// database opened with database.pooler "transaction": a statement kept
// by name on a server connection, a session's setting, a lock held past
// a transaction, fails a test there.
func TestTheDriverSuiteThroughATransactionPooler(t *testing.T) {
	if os.Getenv(dbtest.PooledEnv) == "1" {
		t.Skip("this run is the suite through the pooler")
	}
	if testing.Short() {
		t.Skip("runs the package's tests in another process: not in a -short run")
	}
	dbtest.PoolerURL(t)
	dbtest.PostgresURL(t) // skips without a server
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.skip", "^TestTheDriverSuiteThroughATransactionPooler$|/^sqlite$")
	cmd.Env = append(os.Environ(), dbtest.PooledEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("through the pooler: %v\n%s", err, out)
	}
}

// TestListeningThroughATransactionPooler: without database.listen_url a
// listener through the pooler says it cannot listen and returns (the
// workers poll); with a listen URL that reaches the pooler (which runs
// LISTEN on a server connection it then gives to others), the listener's
// own notification does not reach it and it reports
// driver.ErrNotNotified; with one that reaches the server, a dispatch
// through the pooler wakes it, and it reports nothing.
func TestListeningThroughATransactionPooler(t *testing.T) {
	t.Parallel()
	url := dbtest.PooledPostgresURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type listening struct {
		connected chan struct{}
		woken     chan string
		failed    chan error
		returned  chan struct{}
	}
	listen := func(listenURL string) (*postgresDriver, listening) {
		cfg := db.DefaultConfig()
		cfg.URL, cfg.Pooler, cfg.ListenURL = url, "transaction", listenURL
		d, err := db.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if _, err := db.NewMigrator(d, queueSets).Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		p := newPostgres(d)
		l := listening{make(chan struct{}, 4), make(chan string, 16), make(chan error, 4), make(chan struct{})}
		go func() {
			defer close(l.returned)
			p.Listen(ctx, func(q string) { l.woken <- q }, func() { l.connected <- struct{}{} }, func(err error) { l.failed <- err })
		}()
		return p, l
	}
	_, none := listen("")
	select {
	case err := <-none.failed:
		if !errors.Is(err, db.ErrNoSession) {
			t.Fatalf("without a listen URL: %v; want db.ErrNoSession", err)
		}
	case <-none.connected:
		t.Fatal("without a listen URL it listens through the pooler")
	}
	<-none.returned

	_, pooled := listen(url)
	p, direct := listen(dbtest.ListenURL(url))
	<-pooled.connected
	<-direct.connected
	if _, _, err := p.Insert(ctx, nil, job(1)); err != nil {
		t.Fatal(err)
	}
	p.Announce("default") // as the dispatch does once the job is stored
	select {
	case q := <-direct.woken:
		if q != "default" {
			t.Fatalf("woken by %q; want default", q)
		}
	case err := <-direct.failed:
		t.Fatalf("listening on the server: %v", err)
	case <-time.After(30 * time.Second): // a bound on the failure only
		t.Fatal("a dispatch through the pooler did not wake the listener on the server")
	}
	select {
	case err := <-pooled.failed:
		if !errors.Is(err, driver.ErrNotNotified) {
			t.Fatalf("listening through the pooler: %v; want driver.ErrNotNotified", err)
		}
	case q := <-pooled.woken:
		t.Fatalf("listening through the pooler, woken by %q", q)
	case <-time.After(30 * time.Second): // a bound on the failure only
		t.Fatal("listening through the pooler reported nothing")
	}
	select {
	case err := <-direct.failed:
		t.Fatalf("listening on the server: %v", err)
	default:
	}
}

// TestBehindAPoolerAReservationKeepsItsPlanInAFunction: behind a
// transaction-mode pooler a statement that returns rows runs through a
// PL/pgSQL function of its own (keptPlans), made on its first use, whose
// plan the server connection keeps; dropped by hand, or made stale by a
// column's new type, it is made again, no call failing outside a
// transaction.
func TestBehindAPoolerAReservationKeepsItsPlanInAFunction(t *testing.T) {
	t.Parallel()
	d := migrated(t, dbtest.PooledPostgresURL(t))
	p := newPostgres(d)
	ctx := context.Background()
	kept := func() int {
		t.Helper()
		var n int
		if err := d.QueryRowContext(ctx, "SELECT count(*) FROM pg_proc WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'navree_kept_%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	reserve := func(n int) {
		t.Helper()
		if _, _, err := p.Insert(ctx, nil, job(n)); err != nil {
			t.Fatal(err)
		}
		got, err := p.Reserve(ctx, driver.Reservation{Queue: "default", Now: 10, At: 10, Limit: 1})
		if err != nil || len(got) != 1 || got[0].ID != job(n).ID {
			t.Fatalf("Reserve = %v, %v; want job %d", got, err, n)
		}
	}
	reserve(1)
	if n := kept(); n == 0 {
		t.Fatal("no function keeps the reservation's plan")
	}
	if _, err := d.ExecContext(ctx, "DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT oid FROM pg_proc WHERE pronamespace = current_schema()::regnamespace "+
		"AND proname LIKE 'navree_kept_%' LOOP EXECUTE 'DROP FUNCTION ' || f; END LOOP; END $$"); err != nil {
		t.Fatal(err)
	}
	reserve(2) // as it is, the function gone
	reserve(3) // through the function made again
	if n := kept(); n == 0 {
		t.Fatal("the function was not made again")
	}
}

// TestBehindAPoolerAPoolOfOneConnectionMakesNoFunctionInATransaction: a
// statement first run in a transaction runs as it is (making its
// function would wait for a second connection of a pool that has one),
// and is kept once it runs outside one.
func TestBehindAPoolerAPoolOfOneConnectionMakesNoFunctionInATransaction(t *testing.T) {
	t.Parallel()
	d := migrated(t, dbtest.PooledPostgresURL(t))
	d.SetMaxOpenConns(1)
	p := newPostgres(d)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on the failure only
	defer cancel()
	query := "SELECT count(*) FROM jobs WHERE queue = $1"
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := p.queryTx(ctx, tx.Tx, query, "default")
	if err != nil {
		t.Fatalf("in a transaction: %v", err)
	}
	rows.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	st, err := p.prepared(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err = st.QueryContext(ctx, "default"); err != nil {
		t.Fatalf("outside a transaction: %v", err)
	}
	rows.Close()
	if c, _ := p.kept.calls.Load(query); c == query || c == nil {
		t.Fatalf("outside a transaction the statement runs as %v; want its function's call", c)
	}
}
