package db_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

// TestConnectionLost: what says the answer to a statement sent may have
// been lost, and what does not.
func TestConnectionLost(t *testing.T) {
	fatal := &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	refused := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505", Message: "duplicate key value violates unique constraint"}
	tests := []struct {
		give error
		want bool
	}{
		{nil, false},
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("db: commit: %w", io.EOF), true},
		{fatal, true},
		{fmt.Errorf("queue: dispatch x: %w", fatal), true},
		{refused, false},
		{&pgconn.ConnectError{}, false},
		{driver.ErrBadConn, false},
		{context.Canceled, false},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), false},
		{errors.Join(io.ErrUnexpectedEOF, driver.ErrBadConn), true},
		{errors.Join(refused, errors.New("db: rollback: conn closed")), false},
		{errors.New("sqlite: database is locked"), false},
	}
	for _, tt := range tests {
		if got := db.ConnectionLost(tt.give); got != tt.want {
			t.Errorf("ConnectionLost(%v) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// TestATransactionStillOpenIsInProgress: asked about a transaction whose
// connection still holds it open, the server says it is in progress,
// also when no transaction has ended since it was given its id (the
// snapshot's xmax is then at or below its id, and pg_xact_status is not
// asked); once it commits, committed.
func TestATransactionStillOpenIsInProgress(t *testing.T) {
	url := dbtest.PostgresURL(t)
	d := dbtest.Open(t, url)
	ctx := context.Background()
	tx, err := d.DB.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var tr db.Tracking
	if err := tx.QueryRowContext(ctx, "SELECT "+db.TxColumns).Scan(&tr.Xact, &tr.ServerStart); err != nil {
		t.Fatal(err)
	}
	if status, err := d.XactStatus(ctx, tr); err != nil || status != "in progress" {
		t.Fatalf("an open transaction: %q, %v; want in progress", status, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if status, err := d.XactStatus(ctx, tr); err != nil || status != "committed" {
		t.Fatalf("the committed transaction: %q, %v; want committed", status, err)
	}
}
