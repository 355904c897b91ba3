package db

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrOutcomeUnknown is wrapped by the error of a commit, or of a write
// that commits on its own, whose answer the connection to PostgreSQL lost
// and whose outcome could not be learned since: it may have committed or
// not. SQLite never returns it (see [ConnectionLost]).
var ErrOutcomeUnknown = errors.New("whether the transaction committed is unknown")

// ConnectionLost reports whether err says the connection to PostgreSQL
// broke after a statement or a commit was sent and before its answer came
// back (an end of file, a reset, a timeout, the server's FATAL error as it
// shut down): the server may have carried it out, and committed. An error
// the server answered with (a constraint, a syntax error), one that
// happened before anything was sent (a refused connection, a closed one)
// and any SQLite error are not: SQLite runs in the process, so a commit
// returns only once it committed or rolled back. Of errors joined or
// wrapped together, it reports whether any says so.
func ConnectionLost(err error) bool {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return false // database/sql's, before it sent anything; pgx wraps its own
	}
	switch e := err.(type) {
	case nil, *pgconn.ConnectError:
		return false // nothing was sent
	case *pgconn.PgError:
		severity := cmp.Or(e.SeverityUnlocalized, e.Severity)
		return severity == "FATAL" || severity == "PANIC" || strings.HasPrefix(e.Code, "08")
	case lostCommit:
		return true
	case interface{ SafeToRetry() bool }: // pgx's error for a connection that failed
		return !e.SafeToRetry()
	case net.Error:
		return true
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), ConnectionLost)
	case interface{ Unwrap() error }:
		return ConnectionLost(e.Unwrap())
	}
	return err == io.EOF || err == io.ErrUnexpectedEOF || err == net.ErrClosed
}

// lostCommit is the error of a commit whose answer the connection lost.
// pgx v5.12 reports some such losses as a closed connection, an error
// it says happened before anything was sent: it read the end of file
// while it waited for the answer to a statement without parameters,
// such as COMMIT, closed the connection, then failed to read on.
type lostCommit struct{ err error }

func (e lostCommit) Error() string { return "lost the connection (" + e.err.Error() + ")" }
func (e lostCommit) Unwrap() error { return e.err }

// TxColumns is the select list that tells, in a transaction on
// PostgreSQL, the Xact and ServerStart of a [Tracking]: the transaction's
// id (which selecting it gives the transaction if it had none) and the
// start time of the server.
const TxColumns = "pg_current_xact_id()::text, extract(epoch FROM pg_postmaster_start_time())::text"

// resolveFor bounds how long a unit of work asks whether its transaction
// committed, when its context allows longer.
const resolveFor = 30 * time.Second

// committed asks PostgreSQL, on a connection of the pool, whether the
// tracked transaction committed, once the connection that sent its
// COMMIT was lost. While the transaction is in progress (its server has
// not finished with it), it asks again, until ctx ends or resolveFor has
// passed; and while the server cannot be reached.
func (d *DB) committed(ctx context.Context, t Tracking) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveFor)
	defer cancel()
	pause := 5 * time.Millisecond
	for {
		status, err := d.xactStatus(ctx, t)
		switch {
		case err != nil && !unreachable(err):
			return false, err // asking again would not help
		case err == nil && status != "in progress":
			return status == "committed", nil
		}
		// The server is not back yet, or not done with the transaction.
		select {
		case <-ctx.Done():
			return false, cmp.Or(err, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// xactStatus returns the status of the tracked transaction, "committed",
// "aborted" or "in progress", asking its server once.
//
// pg_xact_status is the server's account of a transaction id. Once the
// server crashed, though, an id may be another transaction's: an id that
// no write-ahead log record on disk holds is given again after the
// restart. So on a server that is not the one that ran the transaction
// (restarted since, or another one), "committed" is believed only when
// the tracking's proof finds the transaction's writes; without them, an
// id at or above the next id of the checkpoint that ended the crash
// recovery (or a clean shutdown) is another's, and the transaction did
// not commit; else, after a second crash or a checkpoint since, or with
// its writes gone (a job that ran), the outcome is unknown.
func (d *DB) xactStatus(ctx context.Context, t Tracking) (string, error) {
	var same, assigned bool
	var status *string
	err := d.DB.DB.QueryRowContext(ctx, "SELECT extract(epoch FROM pg_postmaster_start_time())::text = $2, $1::xid8 < pg_snapshot_xmax(pg_current_snapshot()), "+
		"CASE WHEN $1::xid8 < pg_snapshot_xmax(pg_current_snapshot()) THEN pg_xact_status($1::xid8) END", t.Xact, t.ServerStart).
		Scan(&same, &assigned, &status)
	switch {
	case err != nil:
		return "", err
	case same && !assigned:
		// At or above the snapshot's xmax, one past the latest id that
		// ended: the transaction has not ended either (its server has
		// not yet seen its connection go).
		return "in progress", nil
	case same && status == nil:
		return "", fmt.Errorf("transaction %s is unknown to its server", t.Xact)
	case same:
		return *status, nil
	case !assigned || status == nil || *status != "committed":
		// The transaction ended with its server: had it committed, its id
		// would be on disk, below every id given since, and committed.
		return "aborted", nil
	}
	if t.Proof != "" {
		var one int
		switch err := d.DB.DB.QueryRowContext(ctx, t.Proof, t.Args...).Scan(&one); {
		case err == nil:
			return "committed", nil
		case !errors.Is(err, sql.ErrNoRows):
			return "", err
		}
	}
	var next string
	var shutdown bool
	if err := d.DB.DB.QueryRowContext(ctx, "SELECT next_xid, redo_lsn = checkpoint_lsn FROM pg_control_checkpoint()").Scan(&next, &shutdown); err != nil {
		return "", err
	}
	id, err := strconv.ParseUint(t.Xact, 10, 64)
	if err != nil {
		return "", err
	}
	epoch, low, _ := strings.Cut(next, ":")
	e, err1 := strconv.ParseUint(epoch, 10, 32)
	l, err2 := strconv.ParseUint(low, 10, 32)
	switch {
	case err1 != nil || err2 != nil:
		return "", fmt.Errorf("the checkpoint's next transaction id %q is not EPOCH:ID", next)
	case shutdown && id >= e<<32|l:
		return "aborted", nil // given again since the restart
	case shutdown:
		return "", errors.New("its server crashed, and its writes are not there: they may have been deleted since, or it may not have committed")
	}
	return "", errors.New("its server crashed, and a checkpoint since hides which transaction ids it gave again")
}

// unreachable reports whether err says the server could not be reached
// or the connection broke, rather than that the statement failed.
func unreachable(err error) bool {
	var connect *pgconn.ConnectError
	return ConnectionLost(err) || pgconn.SafeToRetry(err) || errors.As(err, &connect) || errors.Is(err, driver.ErrBadConn)
}
