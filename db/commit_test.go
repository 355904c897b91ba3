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
