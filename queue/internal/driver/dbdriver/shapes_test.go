package dbdriver

import (
	"context"
	"database/sql"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
)

// statementOf is the statement of the reservation r at at on b, of size
// on PostgreSQL (0 on SQLite), and its arguments.
func statementOf(b *base, at any, r driver.Reservation, size int) (string, []any) {
	shape, v := b.reservation(at, r)
	shape.Size = size
	st := b.plans.Reservation(shape)
	return st.SQL, st.Bind(&v)
}

// withLimitParameter is PostgreSQL's reservation by due time with its
// LIMIT a parameter, as it runs for a limit over plan.MaxSize: the
// reference of TestPostgreSQLKeepsOnePlanOfAReservation and of
// BenchmarkReserveWithABacklog.
func withLimitParameter(p *postgresDriver, r driver.Reservation) (string, []any) {
	return statementOf(p.base, nil, r, 0)
}

// reserveWith runs the reservation stmt with args on b and returns the
// jobs it reserved.
func (b *base) reserveWith(ctx context.Context, stmt string, args []any) ([]*driver.Job, error) {
	var jobs []*driver.Job
	err := b.query(ctx, stmt, args, func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		jobs = append(jobs, j)
		return err
	})
	return jobs, err
}

// features is f when on, else none.
func features(on bool, f driver.Features) driver.Features {
	if on {
		return f
	}
	return 0
}

// openBase opens the driver of a database with the queue's tables (see
// openDriver), and returns it with the base it shares.
func openBase(t testing.TB, name string) (driver.Driver, *base) {
	drv, _ := openDriver(t, name)
	switch d := drv.(type) {
	case *sqliteDriver:
		return drv, d.base
	case *postgresDriver:
		return drv, d.base
	}
	t.Fatalf("no base in %T", drv)
	return nil, nil
}

// everyShape is every shape of a reservation, of size.
func everyShape(size int) []plan.Shape {
	var out []plan.Shape
	for i := range 16 {
		out = append(out, plan.Shape{Features: driver.Features(i & 7), Only: i&8 != 0, Size: size})
	}
	return out
}
