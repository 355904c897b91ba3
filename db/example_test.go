package db_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/navree/navree/db"
)

func ExampleDB_Transaction() {
	dir, _ := os.MkdirTemp("", "navree-example")
	defer os.RemoveAll(dir)
	cfg := db.DefaultConfig()
	cfg.URL = "sqlite://" + filepath.Join(dir, "app.db")
	d, err := db.Open(cfg)
	if err != nil {
		panic(err)
	}
	defer d.Close()
	ctx := context.Background()
	d.ExecContext(ctx, "CREATE TABLE contacts (name TEXT)")

	err = d.Transaction(ctx, func(ctx context.Context) error {
		q, err := d.Querier(ctx) // the unit of work's transaction
		if err != nil {
			return err
		}
		if _, err := q.NewRaw("INSERT INTO contacts (name) VALUES (?)", "Ada").Exec(ctx); err != nil {
			return err
		}
		db.UnitOfWorkFrom(ctx).AfterCommit(func(context.Context) { fmt.Println("committed") })
		fmt.Println("inserted")
		return nil
	})
	if err != nil {
		panic(err)
	}
	var n int
	d.QueryRowContext(ctx, "SELECT count(*) FROM contacts").Scan(&n)
	fmt.Println(n, "contact")
	// Output:
	// inserted
	// committed
	// 1 contact
}
