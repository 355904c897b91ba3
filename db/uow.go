package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

// ErrUnitOfWorkDone is returned when a unit of work is used after it
// committed or rolled back.
var ErrUnitOfWorkDone = errors.New("db: the unit of work has ended")

// ErrWriteInTransaction is returned by [DB.Write] on SQLite when its
// context's unit of work holds the write lock: run the write in the unit
// of work's transaction, or outside the unit of work.
var ErrWriteInTransaction = errors.New("db: a write outside the transaction of its context's unit of work would wait for that transaction on SQLite")

// UnitOfWork is one transaction's worth of work. [DB.Transaction] puts one
// on the context it passes on; code below finds it with [UnitOfWorkFrom].
//
// The transaction begins the first time [UnitOfWork.Tx] is called, so a
// unit of work that never touches the database opens none. Functions
// given to [UnitOfWork.AfterCommit] run once the transaction has
// committed, and never if it rolls back.
type UnitOfWork struct {
	db  *DB
	ctx context.Context // the transaction's lifetime

	mu     sync.Mutex
	tx     *bun.Tx
	hooks  []func(context.Context)
	state  uowState
	locked bool
	track  Tracking // PostgreSQL: what the unit knows of its transaction
}

type uowState int

const (
	open uowState = iota
	committed
	rolledBack
)

type uowKey struct{}

// UnitOfWorkFrom returns the unit of work on ctx, or nil outside one.
func UnitOfWorkFrom(ctx context.Context) *UnitOfWork {
	u, _ := ctx.Value(uowKey{}).(*UnitOfWork)
	return u
}

// WithoutUnitOfWork returns ctx outside the unit of work it is in, if
// any: what runs with it commits in transactions of its own, while ctx's
// other values (a trace, a request id) and its deadline and cancellation
// stay. A handler that must commit as it goes, whatever becomes of the
// request, uses it.
func WithoutUnitOfWork(ctx context.Context) context.Context {
	if UnitOfWorkFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, uowKey{}, (*UnitOfWork)(nil))
}

// DB returns the database the unit of work belongs to.
func (u *UnitOfWork) DB() *DB { return u.db }

// Tx returns the unit's transaction, beginning it on first use. ctx bounds
// the wait for SQLite's write lock; the transaction itself lives as long
// as the context given to [DB.Transaction].
func (u *UnitOfWork) Tx(ctx context.Context) (bun.Tx, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != open {
		return bun.Tx{}, ErrUnitOfWorkDone
	}
	if u.tx != nil {
		return *u.tx, nil
	}
	if err := u.db.lock(ctx); err != nil {
		return bun.Tx{}, fmt.Errorf("db: begin: %w", err)
	}
	tx, err := u.db.BeginTx(u.ctx, nil)
	if err != nil {
		u.db.unlock()
		return bun.Tx{}, fmt.Errorf("db: begin: %w", err)
	}
	u.tx, u.locked = &tx, true
	return tx, nil
}

// Tracking is what a unit of work knows of its transaction on
// PostgreSQL, to learn whether it committed when the connection is lost
// during its COMMIT. See [UnitOfWork.Track].
type Tracking struct {
	// Xact and ServerStart are the transaction's id and the start time of
	// its server, as a statement of the transaction returned them by
	// selecting [TxColumns].
	Xact, ServerStart string
	// Proof, if not empty, is a query (placeholders $1, $2…, with Args)
	// that returns a row only if the transaction committed, such as one
	// that looks for a row the transaction inserted. After the server
	// crashed, it tells the transaction's commit from that of another
	// given the same id since.
	Proof string
	Args  []any
}

// Track records, on PostgreSQL, which transaction the unit's is. (The
// queue's dispatch does, in the statement that inserts the job.)
//
// When the connection is then lost while the transaction commits
// ([ConnectionLost]), the unit asks the server on a new connection
// whether it committed, waiting while it is in progress, for up to 30
// seconds or until the context given to [DB.Transaction] ends: committed,
// the commit returns nil and the hooks run; rolled back, the commit's
// error; else an error that wraps [ErrOutcomeUnknown]. An untracked unit
// whose commit lost its connection returns that last error at once.
func (u *UnitOfWork) Track(t Tracking) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.track = t
}

// Tracked reports whether [UnitOfWork.Track] was called.
func (u *UnitOfWork) Tracked() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.track.Xact != ""
}

// holdsLock reports whether the unit's transaction holds the process's
// SQLite write lock.
func (u *UnitOfWork) holdsLock() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.locked
}

// Began reports whether the unit's transaction has begun.
func (u *UnitOfWork) Began() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tx != nil
}

// AfterCommit runs fn after the unit commits, in the order hooks were
// added, with the context given to [DB.Transaction]. If the unit rolls
// back, fn never runs. On a unit that has already committed fn runs at
// once.
func (u *UnitOfWork) AfterCommit(fn func(ctx context.Context)) {
	u.mu.Lock()
	state := u.state
	if state == open {
		u.hooks = append(u.hooks, fn)
	}
	u.mu.Unlock()
	if state == committed {
		fn(u.ctx)
	}
}

// end commits or rolls back the transaction, if one began, and releases
// the write lock. After a commit it runs the hooks.
func (u *UnitOfWork) end(commit bool) error {
	u.mu.Lock()
	tx, hooks := u.tx, u.hooks
	u.hooks = nil
	u.state = rolledBack
	var err error
	if tx != nil {
		if commit {
			err = u.commit(tx)
		} else if err = tx.Rollback(); errors.Is(err, sql.ErrTxDone) {
			err = nil // database/sql rolled back already, when the context ended
		}
	}
	if u.locked {
		u.db.unlock()
		u.locked = false
	}
	if commit && err == nil {
		u.state = committed
	}
	u.mu.Unlock()
	if err != nil {
		if commit {
			return fmt.Errorf("db: commit: %w", err)
		}
		return fmt.Errorf("db: rollback: %w", err)
	}
	if commit {
		for _, fn := range hooks {
			fn(u.ctx)
		}
	}
	return nil
}

// commit commits tx and, when the connection was lost meanwhile, learns
// whether it committed (see [UnitOfWork.Track]).
func (u *UnitOfWork) commit(tx *bun.Tx) error {
	err := tx.Commit()
	if !ConnectionLost(err) && !errors.Is(err, pgconn.ErrConnClosed) {
		return err
	}
	lost := lostCommit{err}
	if u.track.Xact == "" {
		return fmt.Errorf("%w: %w", lost, ErrOutcomeUnknown)
	}
	ok, askErr := u.db.committed(u.ctx, u.track)
	switch {
	case askErr != nil:
		return fmt.Errorf("%w: %w: asking the server: %v", lost, ErrOutcomeUnknown, askErr)
	case !ok:
		return fmt.Errorf("%w; the server says the transaction did not commit", lost)
	}
	return nil
}

// Transaction runs fn in a unit of work: fn's context carries it, its
// transaction commits when fn returns nil and rolls back when fn returns
// an error or panics. After a commit the unit's AfterCommit hooks run.
//
// Inside a unit of work of the same database, Transaction joins it: fn
// runs in the outer transaction, which commits or rolls back as a whole.
func (d *DB) Transaction(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	if u := UnitOfWorkFrom(ctx); u != nil && u.db == d {
		return fn(ctx)
	}
	u := &UnitOfWork{db: d, ctx: ctx}
	defer func() {
		if p := recover(); p != nil {
			_ = u.end(false)
			panic(p)
		}
	}()
	if err := fn(context.WithValue(ctx, uowKey{}, u)); err != nil {
		if rbErr := u.end(false); rbErr != nil {
			return errors.Join(err, rbErr)
		}
		return err
	}
	return u.end(true)
}

// Querier returns what to run a query on: the transaction of the unit of
// work on ctx (beginning it) when there is one for d, else d itself.
func (d *DB) Querier(ctx context.Context) (bun.IDB, error) {
	if u := UnitOfWorkFrom(ctx); u != nil && u.db == d {
		return u.Tx(ctx)
	}
	return d.DB, nil
}
