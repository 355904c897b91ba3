package db_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

const childURLEnv = "NAVREE_DB_TEST_CHILD_URL"

func TestMain(m *testing.M) {
	if url := os.Getenv(childURLEnv); url != "" {
		os.Exit(incrementChild(url))
	}
	os.Exit(dbtest.Main(m))
}

const perChild = 200

// incrementChild is one process of TestSeveralProcessesWriteOneDatabase: it
// reads, increments and writes a counter in its own transactions.
func incrementChild(url string) int {
	cfg := db.DefaultConfig()
	cfg.URL = url
	d, err := db.Open(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer d.Close()
	ctx := context.Background()
	for i := range perChild {
		err := d.Transaction(ctx, func(ctx context.Context) error {
			q, err := d.Querier(ctx)
			if err != nil {
				return err
			}
			read := "SELECT n FROM counter"
			if d.Dialect() == db.Postgres {
				read += " FOR UPDATE" // SQLite's BEGIN IMMEDIATE already holds the write lock
			}
			var n int
			if err := q.NewRaw(read).Scan(ctx, &n); err != nil {
				return err
			}
			if _, err := q.NewRaw("UPDATE counter SET n = ?", n+1).Exec(ctx); err != nil {
				return err
			}
			_, err = q.NewRaw("INSERT INTO counter_log (pid, seen) VALUES (?, ?)", os.Getpid(), n).Exec(ctx)
			return err
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "transaction %d: %v\n", i, err)
			return 1
		}
	}
	return 0
}

// TestSeveralProcessesWriteOneDatabase runs three processes that each
// increment one counter 200 times in read-then-write transactions. None
// fails (no "database is locked" reaches the caller), and no increment is
// lost.
func TestSeveralProcessesWriteOneDatabase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		ctx := context.Background()
		for _, stmt := range []string{
			"CREATE TABLE counter (n INTEGER NOT NULL)",
			"INSERT INTO counter (n) VALUES (0)",
			"CREATE TABLE counter_log (pid INTEGER NOT NULL, seen INTEGER NOT NULL UNIQUE)",
		} {
			if _, err := d.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for range 3 {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childURLEnv+"="+url)
			wg.Go(func() {
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("child: %v\n%s", err, out)
				}
			})
		}
		wg.Wait()
		var n, logged int
		if err := d.QueryRowContext(ctx, "SELECT n FROM counter").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := d.QueryRowContext(ctx, "SELECT count(*) FROM counter_log").Scan(&logged); err != nil {
			t.Fatal(err)
		}
		if n != 3*perChild || logged != 3*perChild {
			t.Fatalf("counter = %d with %d logged increments, want %d each", n, logged, 3*perChild)
		}
	})
}
