package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// postgresDriver is the driver on PostgreSQL. It also tells the workers of
// every process of new jobs (Announce, Listen).
type postgresDriver struct {
	*base

	group grouper // single inserts

	notes   sync.Mutex
	pending map[string]bool // queues to announce
	sending bool

	silent sync.Once // a listener reported driver.ErrNotNotified
}

func newPostgres(d *db.DB) *postgresDriver {
	p := &postgresDriver{base: newBase(d, postgresStatements())}
	p.at = func(_ context.Context, t int64) (any, error) {
		if t == 0 {
			return nil, nil // the statements read NULL as the server's clock
		}
		return t, nil
	}
	p.w = newWorkerStatements(sqlkit.PgAt, "SELECT id, attempts FROM jobs WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)::uuid)) AND reserved_at IS NOT NULL",
		sqlkit.Postgres.Render)
	p.group = grouper{turn: turns(groupsAtOnce), store: p.insertGroup, each: refused}
	p.alone = func(ctx context.Context, job *driver.Job) error {
		if fair.Unplaced(job) {
			// Alone: its trigger may wait for a lock (its key's place,
			// held by a transaction storing a job of the key), which
			// would hold up a group and the groups behind it.
			_, err := p.write(ctx, p.q.insertOf(job), appendRow(nil, job, keyed(job))...)
			return err
		}
		return p.group.insert(ctx, job)
	}
	p.bulk = p.copyJobs
	p.again = p.storeAgain
	p.track = true
	return p
}

// groupsAtOnce is how many groups of single dispatches a process stores
// side by side (see grouper). Each waits for the disk at its commit, so
// that the dispatches that arrive meanwhile make up the next group; a
// second keeps one slow statement from holding up every dispatch. With 8
// dispatching goroutines, 1 and 2 stored 10 to 20% more jobs a second
// than one insert each, 4 fewer (docs/benchmarks.md).
const groupsAtOnce = 2

// insertGroup stores the jobs of a group (see grouper) in one statement,
// which commits on its own: one job with the prepared single insert, more
// in a multi-row insert (in a transaction of chunks past rowsPerInsert).
// No job of a group has a fair key without its place: their inserts wait
// for no lock but, briefly, the features' lock a tidy holds (the trigger
// jobs_features records a job's features).
func (p *postgresDriver) insertGroup(ctx context.Context, jobs []*driver.Job) error {
	switch {
	case len(jobs) == 1:
		return p.insertAlone(ctx, jobs[0])
	case len(jobs) > rowsPerInsert:
		return p.inTx(ctx, nil, func(tx *sql.Tx) error { return p.insertChunks(ctx, tx, nil, jobs, false) })
	}
	k := slices.ContainsFunc(jobs, keyed)
	args := make([]any, 0, 19*len(jobs))
	for _, j := range jobs {
		args = appendRow(args, j, k)
	}
	_, err := p.sqldb.ExecContext(ctx, p.q.insertRows(len(jobs), k), args...)
	return err
}

// againFor bounds how long storeAgain tries, when its context allows
// longer.
const againFor = 30 * time.Second

// storeAgain stores jobs whose first try lost its connection after it
// sent its statements: the server may have committed them, or not, and
// the answer was lost. It tries again on a new connection, in a
// transaction of its own, until one commits or the server refuses it,
// for up to againFor or until ctx ends. What the first try stored it
// finds and keeps, what it did not it stores: either way the jobs are
// stored once. (A job stored by the first try that ran and finished
// before this one looked is stored again, and runs again, as at least
// once allows.)
func (p *postgresDriver) storeAgain(ctx context.Context, jobs []*driver.Job, now int64, first error) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, againFor)
	defer cancel()
	pause := 5 * time.Millisecond
	for {
		ids, err := p.tryAgain(ctx, jobs, now)
		if err == nil {
			return ids, nil
		}
		if !refused(err) {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
				pause = min(2*pause, 200*time.Millisecond)
				continue
			}
		}
		return nil, fmt.Errorf("lost the connection (%w): %w; storing the jobs again: %v", first, db.ErrOutcomeUnknown, err)
	}
}

// tryAgain is one try of storeAgain, in a transaction that joins no unit
// of work: the first try's outcome is what it learns, not its own, and
// it can always try again.
func (p *postgresDriver) tryAgain(ctx context.Context, jobs []*driver.Job, now int64) ([]string, error) {
	tx, err := p.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ids, err := p.insertAll(ctx, tx, nil, jobs, now, true)
	if err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}

// refused reports whether err is the server's error for a statement,
// such as a constraint or a missing privilege, rather than a failure of
// the connection or of connecting.
func refused(err error) bool {
	var connect *pgconn.ConnectError
	var server *pgconn.PgError
	return !errors.As(err, &connect) && errors.As(err, &server) && !db.ConnectionLost(err)
}

// copyColumns are the columns COPY fills; the others take their
// defaults. A batch with no keyed job (see keyed) sends the first
// copyPlain alone: the keys' columns, NULL in each row, cost the server
// their reading all the same.
var copyColumns = []string{"id", "queue", "name", "payload", "max_attempts", "backoff", "timeout_ms", "available_at", "created_at", "meta", "priority",
	"rate_key", "fair_key", "fair_seq", "controls"}

const copyPlain = 11

// copyJobs stores jobs with COPY, the fastest bulk insert, all or none.
func (p *postgresDriver) copyJobs(ctx context.Context, jobs []*driver.Job) error {
	columns := copyColumns[:copyPlain]
	if slices.ContainsFunc(jobs, keyed) {
		columns = copyColumns
	}
	conn, err := p.sqldb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		pg := driverConn.(*stdlib.Conn).Conn()
		rows := make([][]any, len(jobs))
		for i, j := range jobs {
			row := []any{copyID(j.ID), j.Queue, j.Name, string(j.Payload), j.MaxAttempts, j.Backoff.String(), j.TimeoutMs, j.AvailableAt, j.CreatedAt, nullBytes(j.Meta), j.Priority}
			if len(columns) > copyPlain {
				row = append(row, nullString(j.RateKey), nullString(j.FairKey), nullInt(j.FairSeq), driver.ControlsOf(j.LimitMax, j.Rate).Stored())
			}
			rows[i] = row
		}
		_, err := pg.CopyFrom(ctx, pgx.Identifier{"jobs"}, columns, pgx.CopyFromRows(rows))
		return err
	})
}

// copyID is a job's id as COPY sends it best: its 16 bytes. COPY sends
// every value in the binary format, which pgx cannot write from a string
// into a uuid column without first failing (an error formatted with the
// id, then the text parsed): a fifth of the bulk dispatch's time in a CPU
// profile. An id that does not parse goes as it is, for the server to
// refuse.
func copyID(id string) any {
	u, err := uuid.FromString(id)
	if err != nil {
		return id
	}
	return pgtype.UUID{Bytes: u, Valid: true}
}

// The statements that move a job between jobs and failed_jobs, each one
// statement: it moves exactly the rows it deletes, whatever fails
// meanwhile.
var (
	pgFailMove = sqlkit.Postgres.Render("WITH moved AS (DELETE FROM jobs WHERE id = ? AND attempts = ? AND reserved_at IS NOT NULL " +
		"RETURNING id, attempts, errors, snoozes, " + settings + ") " +
		failedInsert + "SELECT id, least(attempts, max_attempts), ?, ?, " + postgresAppendError + ", snoozes, " + settings + " FROM moved")
	pgRetryOne = sqlkit.Postgres.Render("WITH moved AS (DELETE FROM failed_jobs WHERE id = ? RETURNING *) " + retriedInto + " FROM moved" + enteredColumns)
)

// Fail implements driver.Driver.
func (p *postgresDriver) Fail(ctx context.Context, id string, attempt int, f driver.Failure) (bool, error) {
	entry, err := json.Marshal(f)
	if err != nil {
		return false, err
	}
	if f.Flow == "" && f.Limit == "" {
		return p.exec(ctx, pgFailMove, id, attempt, f.Error, f.At, string(entry))
	}
	var moved bool
	err = p.inFlow(ctx, nil, func(t *flowTx) error {
		moved = false
		which, arg := byIDs(t.d, f.Limit != "", id)
		err := p.moveOut(ctx, t.tx, which, arg, func() error {
			res, err := t.tx.ExecContext(ctx, pgFailMove, id, attempt, f.Error, f.At, string(entry))
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			moved = n == 1
			return err
		})
		if err != nil || !moved {
			return err
		}
		if f.Flow != "" {
			return stepFailed(t, id, f.Error, f.At)
		}
		return nil
	})
	return moved, err
}

// Retry implements driver.Driver.
func (p *postgresDriver) Retry(ctx context.Context, id string, now int64) error {
	var flow, key string
	switch err := p.sqldb.QueryRowContext(ctx, p.d.Q(routeOf), id).Scan(&flow, &key); {
	case errors.Is(err, sql.ErrNoRows):
		return driver.ErrNoFailedJob
	case err != nil:
		return err
	case flow != "":
		_, err := p.RetryFlow(ctx, flow, now)
		return err
	case key != "":
		return p.inFlow(ctx, nil, func(t *flowTx) error { return retryHeld(t, []string{id}, now) })
	}
	return p.inTx(ctx, nil, func(tx *sql.Tx) error {
		moved, err := p.moveIn(ctx, tx, pgRetryOne, id, now)
		if err == nil && len(moved) == 0 {
			err = driver.ErrNoFailedJob
		}
		return err
	})
}

// Sync implements driver.Driver. It commits a transaction that waits for
// the disk: the server's log is written in order, so the commits before
// it, those that did not wait, are then durable too. The server waits
// only for a commit that has a transaction id and wrote to the log; a
// transactional logical message (prefix "navree", empty) is the smallest
// such write, needs no table and no privilege, and changes no data.
func (p *postgresDriver) Sync(ctx context.Context) error {
	_, err := p.sqldb.ExecContext(ctx, "SELECT pg_logical_emit_message(true, 'navree', '')")
	return err
}

// Purge implements driver.Driver. It then vacuums jobs: every job it
// deleted left a dead row that the workers' searches would walk until
// autovacuum came.
func (p *postgresDriver) Purge(ctx context.Context, queue string) (int, error) {
	n, err := p.purge(ctx, queue)
	if err != nil {
		return n, err
	}
	_, err = p.sqldb.ExecContext(ctx, "VACUUM jobs")
	return n, err
}

// Channel is the channel a dispatch notifies, with the job's queue as the
// payload.
const Channel = "navree_jobs"

// Announce tells the workers of every process that a job was committed
// on queue: a NOTIFY on Channel, sent after the commit by one goroutine
// that merges the announcements made while it sends, so dispatches never
// wait for it. (A NOTIFY inside each inserting transaction serializes
// their commits; docs/benchmarks.md has what that cost.)
func (p *postgresDriver) Announce(queue string) {
	p.notes.Lock()
	if p.pending == nil {
		p.pending = map[string]bool{}
	}
	p.pending[queue] = true
	sending := p.sending
	p.sending = true
	p.notes.Unlock()
	if !sending {
		go p.sendNotes()
	}
}

func (p *postgresDriver) sendNotes() {
	for {
		p.notes.Lock()
		if len(p.pending) == 0 {
			p.sending = false
			p.notes.Unlock()
			return
		}
		queues := slices.Collect(maps.Keys(p.pending))
		clear(p.pending)
		p.notes.Unlock()
		// Best effort: a lost notification costs a poll interval, nothing
		// more.
		_ = p.announce(queues)
	}
}

// announce notifies Channel of queues in one statement: one round trip,
// so the connection it takes from the pool is back at once. Its commit
// does not wait for the disk: a transaction that only notifies writes
// nothing else to the log, and PostgreSQL flushes the log at commit only
// for one that did.
func (p *postgresDriver) announce(queues []string) error {
	_, err := p.sqldb.ExecContext(context.Background(), "SELECT pg_notify('"+Channel+"', q) FROM unnest($1::text[]) AS q", queues)
	return err
}

// Listen calls wake with the queue of each job dispatched by any process,
// until ctx ends, through LISTEN on a connection of its own, outside the
// pool (db.DB.Connect). A lost connection is reported to failed and
// retried with a growing pause; connected is called each time it
// listens. Without a connection of its own (db.ErrNoSession) it reports
// that to failed and returns. Once it listens it notifies itself: if
// that does not reach it within checkWait, it reports
// driver.ErrNotNotified to failed, once a process, and listens on.
func (p *postgresDriver) Listen(ctx context.Context, wake func(queue string), connected func(), failed func(error)) {
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := p.listen(ctx, wake, connected, failed)
		if ctx.Err() != nil {
			return
		}
		failed(err)
		if errors.Is(err, db.ErrNoSession) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// checkWait is how long a listener waits for its own notification.
const checkWait = 5 * time.Second

func (p *postgresDriver) listen(ctx context.Context, wake func(string), connected func(), failed func(error)) error {
	conn, err := p.db.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	connected()
	// The check goes through the pool, as a dispatch does.
	check := driver.CheckNote + strconv.FormatUint(rand.Uint64(), 36)
	heard := make(chan struct{})
	checkCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func(note string) {
		if err := p.announce([]string{note}); err != nil {
			return // the connection's trouble shows elsewhere
		}
		t := time.NewTimer(checkWait)
		defer t.Stop()
		select {
		case <-heard:
		case <-checkCtx.Done():
		case <-t.C:
			p.silent.Do(func() { failed(driver.ErrNotNotified) })
		}
	}(check)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch {
		case check != "" && n.Payload == check:
			close(heard)
			check = ""
		case !strings.HasPrefix(n.Payload, driver.CheckNote): // another listener's check
			wake(n.Payload)
		}
	}
}
