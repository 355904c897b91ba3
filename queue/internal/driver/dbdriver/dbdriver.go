// Package dbdriver stores jobs in the tables jobs and failed_jobs of the
// app's database: [New] picks the SQLite or the PostgreSQL driver, which
// share what they say alike (base) and differ in what they do not.
//
// It talks to database/sql directly, with placeholders the server binds,
// rather than through bun's query builder: the statements are few, fixed
// and on the hot path.
package dbdriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/control"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// New returns the driver for d's database.
func New(d *db.DB) driver.Driver {
	if d.Dialect() == db.Postgres {
		return newPostgres(d)
	}
	return newSQLite(d)
}

// base is what both drivers share: the database, the statements in its
// words, prepared on first use, and the helpers that run them. What the
// databases do differently it asks of the driver that made it.
type base struct {
	db    *db.DB
	sqldb *sql.DB // bun's DB would interpolate the arguments itself
	q     statements
	w     workerStatements
	stmts sync.Map       // query -> *sql.Stmt, on SQLite (see stmt)
	kept  *keptPlans     // on PostgreSQL behind a transaction-mode pooler
	d     sqlkit.Dialect // its words, and what it rendered in them
	// plans are the statements of reservations, rendered a shape at a
	// time.
	plans *plan.Statements

	// at is the argument for a time t on the clock of reservations: t
	// itself, or for 0 the database's own clock (see package driver).
	at func(ctx context.Context, t int64) (any, error)
	// alone stores one job without a unique key outside a unit of work.
	alone func(ctx context.Context, job *driver.Job) error
	// bulk stores jobs without unique keys outside a unit of work, all or
	// none.
	bulk func(ctx context.Context, jobs []*driver.Job) error
	// again stores jobs again, outside a unit of work, after a first try
	// lost its connection (db.ConnectionLost): what it stored is stored
	// once. Nil on SQLite, where no commit is left without an answer.
	again func(ctx context.Context, jobs []*driver.Job, now int64, first error) ([]string, error)
	// track says the dispatches in a unit of work tell it which
	// transaction it is (PostgreSQL).
	track bool
	// analyzed is, on PostgreSQL, the size of jobs in pages when this
	// process last analyzed it, or tried to (see replan).
	analyzed atomic.Int64
}

func newBase(d *db.DB, q statements) *base {
	b := &base{db: d, sqldb: d.DB.DB, q: q, d: sqlkit.SQLite}
	if d.Dialect() == db.Postgres {
		b.d = sqlkit.Postgres
	}
	b.d = b.d.Kept()
	b.plans = plan.New(b.d, control.Parts(), columns)
	if d.Pooled() {
		b.kept = &keptPlans{sqldb: b.sqldb}
	}
	return b
}

// prepared returns query as a stmt: on SQLite prepared on the database
// (database/sql prepares it again on each connection that needs it).
func (b *base) prepared(ctx context.Context, query string) (stmt, error) {
	if b.d.PG {
		return stmt{query: query, on: b.sqldb, kept: b.kept}, nil
	}
	if st, ok := b.stmts.Load(query); ok {
		return stmt{prepared: st.(*sql.Stmt)}, nil
	}
	st, err := b.sqldb.PrepareContext(ctx, query)
	if err != nil {
		return stmt{}, err
	}
	if prev, loaded := b.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return stmt{prepared: prev.(*sql.Stmt)}, nil
	}
	return stmt{prepared: st}, nil
}

// stmt is a statement of a driver's. SQLite would parse it anew at each
// call: it is prepared once and kept. PostgreSQL's is sent whole, pgx
// keeping what each connection parsed: its statement cache, or, through
// a transaction-mode pooler (database.pooler), the statement's
// description alone, since a statement prepared on one server
// connection is unknown to the next (db.Open).
type stmt struct {
	prepared *sql.Stmt // SQLite
	query    string    // PostgreSQL, run on on
	on       runner
	kept     *keptPlans // behind a transaction-mode pooler: what runs the queries
}

// runner runs a statement: the pool or a transaction.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// in is s run in tx.
func (s stmt) in(ctx context.Context, tx *sql.Tx) stmt {
	if s.prepared != nil {
		return stmt{prepared: tx.StmtContext(ctx, s.prepared)}
	}
	return stmt{query: s.query, on: tx, kept: s.kept}
}

// ExecContext runs s.
func (s stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	if s.prepared != nil {
		return s.prepared.ExecContext(ctx, args...)
	}
	return s.on.ExecContext(ctx, s.query, args...)
}

// QueryContext runs s and returns its rows: behind a transaction-mode
// pooler through its function (keptPlans), or, outside a transaction,
// as it is when that function is gone or stale.
func (s stmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if s.prepared != nil {
		return s.prepared.QueryContext(ctx, args...)
	}
	if s.kept == nil {
		return s.on.QueryContext(ctx, s.query, args...)
	}
	_, inTx := s.on.(*sql.Tx)
	call := s.kept.call(ctx, s.query, !inTx)
	rows, err := s.on.QueryContext(ctx, call, args...)
	if err != nil && call != s.query && s.kept.stale(ctx, s.query, err, !inTx) && !inTx {
		return s.on.QueryContext(ctx, s.query, args...)
	}
	return rows, err
}

// QueryRowContext runs s and returns its first row (a read, its plan not
// kept: see QueryContext).
func (s stmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	if s.prepared != nil {
		return s.prepared.QueryRowContext(ctx, args...)
	}
	return s.on.QueryRowContext(ctx, s.query, args...)
}

// tx returns the transaction of uow when uow is a unit of work of b's
// database, else nil.
func (b *base) tx(ctx context.Context, uow *db.UnitOfWork) (*sql.Tx, error) {
	if uow == nil || uow.DB() != b.db {
		return nil, nil
	}
	tx, err := uow.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Tx, nil
}

// inTx runs fn in the transaction of uow when uow belongs to b's
// database, else in a transaction of its own.
func (b *base) inTx(ctx context.Context, uow *db.UnitOfWork, fn func(tx *sql.Tx) error) error {
	tx, err := b.tx(ctx, uow)
	if err != nil {
		return err
	}
	if tx != nil {
		return fn(tx)
	}
	return b.db.Transaction(ctx, func(ctx context.Context) error {
		return b.inTx(ctx, db.UnitOfWorkFrom(ctx), fn)
	})
}

// query runs a prepared write statement that returns rows, and calls row
// for each, holding the process's SQLite write lock until the statement
// is done.
func (b *base) query(ctx context.Context, query string, args []any, row func(*sql.Rows) error) error {
	return b.rows(ctx, query, args, row, b.db.Write)
}

// read runs a prepared read and calls row for each of its rows, outside
// the write lock.
func (b *base) read(ctx context.Context, query string, args []any, row func(*sql.Rows) error) error {
	return b.rows(ctx, query, args, row, func(_ context.Context, fn func() error) error { return fn() })
}

// rows runs a prepared statement in hold (the write lock, or none) and
// calls row for each of its rows.
func (b *base) rows(ctx context.Context, query string, args []any, row func(*sql.Rows) error, hold func(context.Context, func() error) error) error {
	st, err := b.prepared(ctx, query)
	if err != nil {
		return err
	}
	return hold(ctx, func() error {
		rows, err := st.QueryContext(ctx, args...)
		return sqlkit.EachRow(rows, err, row)
	})
}

// exists runs a prepared read that selects a row or none, outside the
// write lock: on SQLite it reads a snapshot while another writes.
func (b *base) exists(ctx context.Context, query string, args ...any) (bool, error) {
	st, err := b.prepared(ctx, query)
	if err != nil {
		return false, err
	}
	var one int
	switch err := st.QueryRowContext(ctx, args...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// exec runs one write statement and reports whether it changed one row.
func (b *base) exec(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := b.write(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// write runs one write statement on its own, prepared, holding the
// process's SQLite write lock.
func (b *base) write(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	st, err := b.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	err = b.db.Write(ctx, func() error {
		res, err = st.ExecContext(ctx, args...)
		return err
	})
	return res, err
}

// count runs one write statement and returns how many rows it changed.
func (b *base) count(ctx context.Context, query string, args ...any) (int, error) {
	res, err := b.write(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Upkeep implements driver.Driver: each upkeep is its feature's
// (pruneRates, prunePlaces, readmit), or the plans' (replan).
func (b *base) Upkeep(ctx context.Context, u driver.Upkeep, now, at int64) (int, error) {
	switch u {
	case driver.UpkeepRates:
		return 0, b.pruneRates(ctx, at)
	case driver.UpkeepPlaces:
		return 0, b.prunePlaces(ctx)
	case driver.UpkeepHeld:
		return b.readmit(ctx, now)
	case driver.UpkeepPlans:
		return b.replan(ctx)
	}
	return 0, fmt.Errorf("dbdriver: no upkeep %v", u)
}
