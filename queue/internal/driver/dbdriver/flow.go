package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/navree/navree/queue/internal/control/flow"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/control/limit"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// The statements of flows over the jobs' tables, in SQLite's words with
// LIST for a list of ids (one argument: a JSON array); dialect rewrites
// them for each database. Those over the flows' own tables are package
// flow's.
const (
	// stepSettings are the columns a flow's step keeps under the same
	// names in queue_steps, jobs and queue_held: what its job was
	// dispatched with. A setting added to jobs that a step keeps goes
	// here, once: the step's insert and its release carry it.
	stepSettings = "queue, name, payload, max_attempts, backoff, timeout_ms, meta, priority, limit_key, rate_key, fair_key, controls"
	stepRelease  = "INSERT INTO jobs (id, attempts, available_at, created_at, flow, " + stepSettings + ") " +
		"SELECT job_id, 0, ? + delay_ms, ?, flow_id, " + stepSettings + " FROM queue_steps " +
		"WHERE job_id IN LIST AND state = 'held' AND limit_key IS NULL" + enteredColumns
	stepHold = "INSERT INTO queue_held (id, attempts, available_at, created_at, flow, snoozes, " + stepSettings + ") " +
		"SELECT job_id, 0, ? + delay_ms, ?, flow_id, 0, " + stepSettings + " " +
		"FROM queue_steps WHERE job_id IN LIST AND state = 'held' AND limit_key IS NOT NULL RETURNING queue"
	// heldOfFlow are the jobs of a flow's steps held by their limits.
	heldOfFlow = "SELECT id FROM queue_held WHERE flow = ?"
	heldCopy   = failedInsert + "SELECT id, attempts, ?, ?, errors, snoozes, " + settings + " FROM queue_held WHERE id IN LIST"
	heldDel    = "DELETE FROM queue_held WHERE id IN LIST"
	waitingOf  = "SELECT j.id FROM queue_steps s JOIN jobs j ON j.id = s.job_id WHERE s.flow_id = ? AND s.state = 'queued' AND j.reserved_at IS NULL"
	failedCopy = failedInsert + "SELECT id, attempts, ?, ?, errors, snoozes, " + settings + " FROM jobs WHERE id IN LIST"
	jobsDelete = "DELETE FROM jobs WHERE id IN LIST"
	runningOf  = "INSERT INTO queue_cancels (job_id, requested_at) SELECT j.id, ? FROM queue_steps s JOIN jobs j ON j.id = s.job_id " +
		"WHERE s.flow_id = ? AND s.state = 'queued' AND j.reserved_at IS NOT NULL ON CONFLICT (job_id) DO NOTHING RETURNING job_id"
	// stepsFailed: the steps to put back, those whose job is gone (a
	// failed job deleted or pruned) left out: neither a held job nor a
	// failed one is left to run.
	stepsFailed = "SELECT job_id FROM queue_steps WHERE flow_id = ? AND role = 'step' AND state IN ('failed', 'cancelled') " +
		"AND (payload IS NOT NULL OR job_id IN (SELECT id FROM failed_jobs WHERE flow = queue_steps.flow_id)) ORDER BY seq"
	failedIn  = "SELECT id FROM failed_jobs WHERE id IN LIST"
	limitedIn = "SELECT id FROM failed_jobs WHERE id IN LIST AND limit_key IS NOT NULL"
	retryIn   = retriedInto + " FROM failed_jobs WHERE id IN LIST"
	failedDel = "DELETE FROM failed_jobs WHERE id IN LIST"

	outcomeOf = "SELECT (SELECT result FROM queue_results WHERE job_id = ?), (SELECT count(*) FROM jobs WHERE id = ?), " +
		"(SELECT error FROM failed_jobs WHERE id = ?), (SELECT state FROM queue_steps WHERE job_id = ?), " +
		"(SELECT error FROM queue_steps WHERE job_id = ?), (SELECT count(*) FROM succeeded_jobs WHERE id = ?)"

	flowOfFailed  = "SELECT coalesce(CAST(flow AS TEXT), '') FROM failed_jobs WHERE id = ?"
	anyFlowFailed = "SELECT (SELECT count(*) FROM (SELECT 1 FROM failed_jobs WHERE flow IS NOT NULL LIMIT 1) AS f) + " +
		"(SELECT count(*) FROM (SELECT 1 FROM failed_jobs WHERE limit_key IS NOT NULL LIMIT 1) AS l)"
)

// dialect is b's.
func (b *base) dialect() sqlkit.Dialect { return b.d }

// flowTx is a transaction that resolves flows: the driver's FlowTx.
type flowTx struct {
	ctx    context.Context
	tx     *sql.Tx
	b      *base // its driver: its dialect and its prepared statements
	d      sqlkit.Dialect
	queues map[string]bool // the queues of the jobs it released
	ended  bool            // it ended steps or kept results: tell Await's callers
}

func (t *flowTx) exec(query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(t.ctx, t.d.Q(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// strings runs query and reads the first column of each row.
func (t *flowTx) strings(query string, args ...any) ([]string, error) {
	return sqlkit.Texts(t.ctx, t.tx, t.d.Q(query), args...)
}

func (t *flowTx) End(ids []string, state, errText string, at int64) ([]flow.Ended, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := t.tx.QueryContext(t.ctx, t.d.Q(flow.EndSteps), state, nullString(errText), at, sqlkit.List(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []flow.Ended
	for rows.Next() {
		e := flow.Ended{State: state}
		if err := rows.Scan(&e.ID, &e.Flow, &e.Role, &e.Dependants); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (t *flowTx) Satisfy(ids []string, failed bool) ([]flow.Held, error) {
	n := 0
	if failed {
		n = 1
	}
	rows, err := t.tx.QueryContext(t.ctx, t.d.Q(flow.Satisfy), n, sqlkit.List(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []flow.Held
	for rows.Next() {
		var h flow.Held
		if err := rows.Scan(&h.ID, &h.Flow, &h.Waiting, &h.FailedDeps, &h.RunIfFailed); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

func (t *flowTx) Tally(id string, succeeded, failed int, at int64) (driver.Flow, error) {
	n := succeeded + failed
	return scanFlow(t.tx.QueryRowContext(t.ctx, t.d.Q(flow.Tally), n, succeeded, failed, n, at, n, failed, id))
}

func (t *flowTx) Release(ids []string, now int64) error {
	released, err := t.b.moveIn(t.ctx, t.tx, t.d.Q(stepRelease), now, now, sqlkit.List(ids))
	if err != nil {
		return err
	}
	queuesOf(released, t.queues)
	var queues []string
	keys, err := t.strings(flow.StepKeys, sqlkit.List(ids))
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		if err := limit.Lock(t.ctx, t.tx, t.d, keys); err != nil {
			return err
		}
		held, err := t.strings(stepHold, now, now, sqlkit.List(ids))
		if err != nil {
			return err
		}
		queues = append(queues, held...)
	}
	for _, q := range queues {
		t.queues[q] = true
	}
	if _, err = t.exec(flow.Queued, sqlkit.List(ids)); err != nil || len(keys) == 0 {
		return err
	}
	return admit(t.ctx, t.tx, t.b, limit.FreedAt(keys, 0))
}

func (t *flowTx) HeldOf(id, role string) ([]string, error) {
	return t.strings(flow.HeldOf, id, role)
}

func (t *flowTx) Unqueue(flow, errText string, now int64) ([]string, error) {
	query := waitingOf
	if t.d.PG {
		query += " FOR UPDATE OF j SKIP LOCKED" // a job being reserved runs
	}
	ids, err := t.strings(query, flow)
	if err != nil {
		return nil, err
	}
	// The jobs of its steps held by their limits never run either: they
	// go first, so that the keys' next held jobs let in after the waiting
	// ones go are of other flows.
	var held []string
	which, arg := byIDs(t.d, true, ids...)
	err = t.b.moveOut(t.ctx, t.tx, which, arg, func() error {
		var err error
		if held, err = t.strings(heldOfFlow, flow); err != nil {
			return err
		}
		if len(held) > 0 {
			if _, err := t.exec(heldCopy, errText, now, sqlkit.List(held)); err != nil {
				return err
			}
			if _, err := t.exec(heldDel, sqlkit.List(held)); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := t.exec(failedCopy, errText, now, sqlkit.List(ids)); err != nil {
			return err
		}
		_, err = t.exec(jobsDelete, sqlkit.List(ids))
		return err
	})
	return append(ids, held...), err
}

// notify tells the listening workers of the queues of the jobs t
// released, by a NOTIFY its commit sends (on PostgreSQL; SQLite's
// workers poll).
func (t *flowTx) notify() error {
	if !t.d.PG {
		return nil
	}
	if t.ended {
		t.queues[driver.ResultNote] = true
	}
	for q := range t.queues {
		if _, err := t.tx.ExecContext(t.ctx, "SELECT pg_notify($1, $2)", Channel, q); err != nil {
			return err
		}
	}
	return nil
}

// newFlowTx is a FlowTx on tx.
func newFlowTx(ctx context.Context, tx *sql.Tx, b *base) *flowTx {
	return &flowTx{ctx: ctx, tx: tx, b: b, d: b.dialect(), queues: map[string]bool{}}
}

// scanFlow reads a row of flow.Columns.
func scanFlow(row scanner) (driver.Flow, error) {
	var f driver.Flow
	var finished sql.NullInt64
	err := row.Scan(&f.ID, &f.Kind, &f.Name, &f.CreatedAt, &finished, &f.State, &f.CancelOnFailure, &f.Total, &f.Pending, &f.Succeeded, &f.Failed)
	if errors.Is(err, sql.ErrNoRows) {
		return f, driver.ErrNoFlow
	}
	f.FinishedAt = finished.Int64
	return f, err
}

// inFlow runs fn in a transaction that resolves flows, in uow when it is
// b's, and afterwards tells the listening workers of the queues of the
// jobs it released (on PostgreSQL, by a NOTIFY its commit sends). On
// its own, a transaction that PostgreSQL aborts for a deadlock (two
// transactions ending steps of one flow can lock its rows in different
// orders) or a serialization failure is run again.
func (b *base) inFlow(ctx context.Context, uow *db.UnitOfWork, fn func(t *flowTx) error) error {
	run := func() error {
		return b.inTx(ctx, uow, func(tx *sql.Tx) error {
			t := newFlowTx(ctx, tx, b)
			if err := fn(t); err != nil {
				return err
			}
			return t.notify()
		})
	}
	for try := 0; ; try++ {
		err := run()
		var pgErr *pgconn.PgError
		if err == nil || uow != nil || try == 9 || !errors.As(err, &pgErr) || pgErr.Code != "40P01" && pgErr.Code != "40001" {
			return err
		}
		time.Sleep(time.Duration(try+1) * time.Millisecond)
	}
}

// StartFlow implements driver.Flows.
func (b *base) StartFlow(ctx context.Context, uow *db.UnitOfWork, nf *driver.NewFlow) error {
	f := nf.Flow
	return b.inFlow(ctx, uow, func(t *flowTx) error {
		if _, err := t.exec(flow.Insert, f.ID, f.Kind, f.Name, f.CreatedAt, f.State, f.CancelOnFailure, f.Total, f.Pending); err != nil {
			return err
		}
		return b.addSteps(t, f.ID, 0, nf.Steps, nf.Edges)
	})
}

// AddSteps implements driver.Flows.
func (b *base) AddSteps(ctx context.Context, uow *db.UnitOfWork, id string, steps []*driver.Step, edges []driver.Edge) error {
	n := 0
	for _, s := range steps {
		if s.Role == driver.RoleStep {
			n++
		}
	}
	return b.inFlow(ctx, uow, func(t *flowTx) error {
		grown, err := t.exec(flow.Grow, n, n, id)
		if err != nil {
			return err
		}
		if grown == 0 {
			var kind string
			var pending int
			if err := t.tx.QueryRowContext(ctx, t.d.Q(flow.Lock), id).Scan(&kind, &pending); errors.Is(err, sql.ErrNoRows) {
				return driver.ErrNoFlow
			} else if err != nil {
				return err
			}
			return driver.ErrFlowEnded
		}
		var seq int
		if err := t.tx.QueryRowContext(ctx, t.d.Q(flow.LastSeq), id).Scan(&seq); err != nil {
			return err
		}
		return b.addSteps(t, id, seq, steps, edges)
	})
}

// stepsPerInsert bounds a multi-row insert of steps (21 parameters a
// row) and of edges (3).
const stepsPerInsert = 500

// addSteps stores steps of the flow id (numbered from after seq) and edges in
// t, and the roots' jobs.
func (b *base) addSteps(t *flowTx, id string, seq int, steps []*driver.Step, edges []driver.Edge) error {
	var roots []*driver.Job
	for from := 0; from < len(steps); from += stepsPerInsert {
		chunk := steps[from:min(len(steps), from+stepsPerInsert)]
		var q strings.Builder
		q.WriteString("INSERT INTO queue_steps (" + flow.StepColumns + ", " + stepSettings + ") VALUES ")
		args := make([]any, 0, 21*len(chunk))
		for i, s := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			j := s.Job
			state, payload := driver.StepHeld, any(string(j.Payload))
			if s.Role == driver.RoleStep && s.Waiting == 0 {
				state, payload = driver.StepQueued, nil
				root := *j
				root.Flow = id
				roots = append(roots, &root)
			}
			seq++
			args = append(args, j.ID, id, seq, s.Name, s.Role, state, s.Waiting, s.RunIfFailed, s.DelayMs, // flow.StepColumns
				j.Queue, j.Name, payload, j.MaxAttempts, j.Backoff.String(), j.TimeoutMs, nullBytes(j.Meta), j.Priority, // stepSettings
				nullString(j.LimitKey), nullString(j.RateKey), nullString(j.FairKey), driver.ControlsOf(j.LimitMax, j.Rate).Stored())
		}
		if _, err := t.exec(q.String(), args...); err != nil {
			return err
		}
	}
	for from := 0; from < len(edges); from += stepsPerInsert {
		chunk := edges[from:min(len(edges), from+stepsPerInsert)]
		var q strings.Builder
		q.WriteString("INSERT INTO queue_edges (from_id, to_id, flow_id) VALUES ")
		args := make([]any, 0, 3*len(chunk))
		for i, e := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?)")
			args = append(args, e.From, e.To, id)
		}
		if _, err := t.exec(q.String(), args...); err != nil {
			return err
		}
	}
	var plain, limited []*driver.Job
	for _, r := range roots {
		t.queues[r.Queue] = true
		if r.LimitKey != "" {
			limited = append(limited, r)
		} else {
			plain = append(plain, r)
		}
	}
	if err := b.placeAll(t.ctx, t.tx, plain); err != nil {
		return err
	}
	if err := b.insertChunks(t.ctx, t.tx, nil, plain, false); err != nil {
		return err
	}
	if len(limited) == 0 {
		return nil
	}
	// The roots with a concurrency limit go in as a dispatch's do: held
	// while their key is full.
	if err := limit.Lock(t.ctx, t.tx, t.d, limit.Keys(limited)); err != nil {
		return err
	}
	return b.holdAll(t.ctx, t.tx, nil, limited)
}

// Finish implements driver.Flows.
func (b *base) Finish(ctx context.Context, done []driver.Attempt, keep bool) ([]string, error) {
	return b.completeIn(ctx, done, keep, func(t *flowTx, ids []string) error {
		var steps []string
		var at int64
		for _, a := range done {
			if !containsID(ids, a.ID) {
				continue
			}
			at = max(at, a.At)
			if a.Result != "" {
				if _, err := t.exec(flow.InsertResult, a.ID, nullString(a.Flow), a.Result, a.At); err != nil {
					return err
				}
			}
			if a.Flow != "" {
				steps = append(steps, a.ID)
			}
		}
		t.ended = len(ids) > 0
		ended, err := t.End(steps, driver.StepSucceeded, "", at)
		if err != nil {
			return err
		}
		return flow.Resolve(t, ended, at)
	})
}

// containsID reports whether ids holds id, PostgreSQL's uuids and the
// ids given compared as the same text.
func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if strings.EqualFold(x, id) {
			return true
		}
	}
	return false
}

// stepFailed ends, in t, the step of the job id moved to the failed jobs.
func stepFailed(t *flowTx, id, errText string, at int64) error {
	t.ended = true
	ended, err := t.End([]string{id}, flow.FailedState(errText), errText, at)
	if err != nil {
		return err
	}
	return flow.Resolve(t, ended, at)
}

// CancelFlow implements driver.Flows.
func (b *base) CancelFlow(ctx context.Context, id string, now int64) (driver.FlowCancel, error) {
	var did driver.FlowCancel
	err := b.inFlow(ctx, nil, func(t *flowTx) error {
		did = driver.FlowCancel{}
		kind, err := t.lockFlow(id)
		if err != nil {
			return err
		}
		if _, err := t.exec(flow.Cancel, id); err != nil {
			return err
		}
		why := driver.FlowCancelledErr + kind
		for _, role := range []string{driver.RoleThen, driver.RoleCatch, driver.RoleFinally} {
			ids, err := t.HeldOf(id, role)
			if err != nil {
				return err
			}
			if _, err := t.End(ids, driver.StepCancelled, why, now); err != nil {
				return err
			}
		}
		waiting, err := t.Unqueue(id, why, now)
		if err != nil {
			return err
		}
		held, err := t.HeldOf(id, driver.RoleStep)
		if err != nil {
			return err
		}
		ended, err := t.End(append(waiting, held...), driver.StepCancelled, why, now)
		if err != nil {
			return err
		}
		did.Ended = len(ended)
		running, err := t.strings(runningOf, now, id)
		if err != nil {
			return err
		}
		did.Signalled = len(running)
		if t.d.PG {
			for _, r := range running {
				if _, err := t.tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", Channel, driver.CancelNote+r); err != nil {
					return err
				}
			}
		}
		return flow.Resolve(t, ended, now)
	})
	return did, err
}

// lockFlow reads the kind of the flow id, locking its row on PostgreSQL:
// ErrNoFlow when there is none.
func (t *flowTx) lockFlow(id string) (string, error) {
	query := flow.Lock
	if t.d.PG {
		query += " FOR UPDATE"
	}
	var kind string
	var pending int
	err := t.tx.QueryRowContext(t.ctx, t.d.Q(query), id).Scan(&kind, &pending)
	if errors.Is(err, sql.ErrNoRows) {
		return "", driver.ErrNoFlow
	}
	return kind, err
}

// RetryFlow implements driver.Flows.
func (b *base) RetryFlow(ctx context.Context, id string, now int64) (int, error) {
	var n int
	err := b.inFlow(ctx, nil, func(t *flowTx) (err error) {
		n, err = retryFlow(t, id, now)
		return err
	})
	return n, err
}

// retryFlow is RetryFlow in t.
func retryFlow(t *flowTx, id string, now int64) (int, error) {
	if _, err := t.lockFlow(id); err != nil {
		return 0, err
	}
	failed, err := t.strings(stepsFailed, id)
	if err != nil || len(failed) == 0 {
		return 0, err
	}
	if _, err := t.exec(flow.CallbacksAgain, id); err != nil {
		return 0, err
	}
	ran, err := t.strings(failedIn, sqlkit.List(failed))
	if err != nil {
		return 0, err
	}
	if len(ran) > 0 {
		limited, err := t.strings(limitedIn, sqlkit.List(ran))
		if err != nil {
			return 0, err
		}
		var plain []string
		for _, s := range ran {
			if !containsID(limited, s) {
				plain = append(plain, s)
			}
		}
		if len(plain) > 0 {
			moved, err := t.b.moveIn(t.ctx, t.tx, t.d.Q(retryIn+enteredColumns), now, sqlkit.List(plain))
			if err != nil {
				return 0, err
			}
			queuesOf(moved, t.queues)
			if _, err := t.exec(failedDel, sqlkit.List(plain)); err != nil {
				return 0, err
			}
		}
		if len(limited) > 0 { // held again by their limits, as a retry of a dispatched one is
			if err := retryHeld(t, limited, now); err != nil {
				return 0, err
			}
		}
		if _, err := t.exec(flow.StepsBack, sqlkit.List(ran)); err != nil {
			return 0, err
		}
	}
	var never []string
	for _, s := range failed {
		if !containsID(ran, s) {
			never = append(never, s)
		}
	}
	if _, err := t.exec(flow.Again, len(failed), len(failed), id); err != nil {
		return 0, err
	}
	if len(never) > 0 {
		rows, err := t.tx.QueryContext(t.ctx, t.d.Q(flow.StepsHeld), sqlkit.List(never))
		if err != nil {
			return 0, err
		}
		var due []string
		for rows.Next() {
			var sid string
			var waiting int
			if err := rows.Scan(&sid, &waiting); err != nil {
				rows.Close()
				return 0, err
			}
			if waiting == 0 {
				due = append(due, sid)
			}
		}
		if err := rows.Close(); err != nil {
			return 0, err
		}
		if len(due) > 0 {
			if err := t.Release(due, now); err != nil {
				return 0, err
			}
		}
	}
	return len(failed), nil
}

// ReadFlow implements driver.Flows.
func (b *base) ReadFlow(ctx context.Context, id string) (driver.Flow, []driver.Step, error) {
	d := b.dialect()
	f, err := scanFlow(b.sqldb.QueryRowContext(ctx, d.Q(flow.Read), id))
	if err != nil {
		return f, nil, err
	}
	steps, err := b.readSteps(ctx, d.Q(flow.Steps), id)
	if err != nil {
		return f, nil, err
	}
	at := make(map[string]int, len(steps))
	for i, s := range steps {
		at[strings.ToLower(s.Job.ID)] = i
	}
	rows, err := b.sqldb.QueryContext(ctx, d.Q(flow.Edges), id)
	if err != nil {
		return f, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			return f, nil, err
		}
		if i, ok := at[strings.ToLower(to)]; ok {
			steps[i].Deps = append(steps[i].Deps, from)
		}
	}
	return f, steps, rows.Err()
}

// readSteps reads steps with the statement query (flow.Steps's columns).
func (b *base) readSteps(ctx context.Context, query string, args ...any) ([]driver.Step, error) {
	rows, err := b.sqldb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Step
	for rows.Next() {
		s := driver.Step{Job: &driver.Job{}}
		var errText, payload, result sql.NullString
		var ended sql.NullInt64
		if err := rows.Scan(&s.Job.ID, &s.Name, &s.Role, &s.State, &s.Waiting, &s.FailedDeps, &s.RunIfFailed, &errText, &ended,
			&s.Job.Queue, &s.Job.Name, &payload, &s.Job.MaxAttempts, &s.Job.TimeoutMs, &s.DelayMs, &result); err != nil {
			return nil, err
		}
		s.Error, s.EndedAt = errText.String, ended.Int64
		if payload.Valid {
			s.Job.Payload = []byte(payload.String)
		}
		if result.Valid {
			s.Result = []byte(result.String)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ListFlows implements driver.Flows.
func (b *base) ListFlows(ctx context.Context, q driver.FlowsQuery) ([]driver.Flow, error) {
	before := q.Before
	if before == "" {
		before = lastID
	}
	rows, err := b.sqldb.QueryContext(ctx, b.dialect().Q(flow.List), q.Kind, q.Kind, before, q.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Flow
	for rows.Next() {
		f, err := scanFlow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Upstream implements driver.Flows.
func (b *base) Upstream(ctx context.Context, id string) ([]driver.Step, error) {
	return b.readSteps(ctx, b.dialect().Q(flow.Upstream), id, id)
}

// Outcome implements driver.Flows, in one statement: one snapshot, so
// that a job that finishes meanwhile is read either pending or with its
// result, never gone without one.
func (b *base) Outcome(ctx context.Context, id string) (driver.Outcome, error) {
	var result, failed, state, stepErr sql.NullString
	var pending, kept int
	err := b.sqldb.QueryRowContext(ctx, b.dialect().Q(outcomeOf), id, id, id, id, id, id).Scan(&result, &pending, &failed, &state, &stepErr, &kept)
	switch {
	case err != nil:
		return driver.Outcome{}, err
	case result.Valid:
		return driver.Outcome{State: driver.OutcomeSucceeded, Result: []byte(result.String)}, nil
	case pending > 0:
		return driver.Outcome{State: driver.OutcomePending}, nil
	case failed.Valid:
		return driver.Outcome{State: driver.OutcomeFailed, Error: failed.String}, nil
	case state.String == driver.StepHeld || state.String == driver.StepQueued:
		return driver.Outcome{State: driver.OutcomePending}, nil
	case state.String == driver.StepSucceeded || kept > 0:
		return driver.Outcome{State: driver.OutcomeSucceeded}, nil
	case state.Valid:
		return driver.Outcome{State: driver.OutcomeFailed, Error: cmp.Or(stepErr.String, state.String)}, nil
	}
	return driver.Outcome{}, nil
}

// PruneFlows implements driver.Flows.
func (b *base) PruneFlows(ctx context.Context, before int64, limit int) (int, error) {
	var n int
	err := b.inFlow(ctx, nil, func(t *flowTx) error {
		old, err := t.strings(flow.Old, before, limit)
		if err != nil {
			return err
		}
		n = len(old)
		if n > 0 {
			for _, q := range []string{flow.PruneResults, flow.PruneEdges, flow.PruneSteps, flow.PruneFlows} {
				if _, err := t.exec(q, sqlkit.List(old)); err != nil {
					return err
				}
			}
		}
		loose, err := t.exec(flow.PruneLooseResults, before, limit-n)
		n += int(loose)
		return err
	})
	return n, err
}

// failedKeysFlows lists the keys of a batch of failed jobs, with their
// flows.
const failedKeysFlows = "SELECT failed_at, id, coalesce(CAST(flow AS TEXT), ''), limit_key IS NOT NULL FROM failed_jobs WHERE (failed_at, id) > (?, ?) AND (failed_at, id) <= (?, ?) ORDER BY failed_at, id LIMIT ?"

// anyFailedOfFlow reports whether a failed job of a flow, or with a
// concurrency limit, is kept: then RetryFailed takes retryFailedFlows.
func (b *base) anyFailedOfFlow(ctx context.Context) (bool, error) {
	var n int
	err := b.sqldb.QueryRowContext(ctx, anyFlowFailed).Scan(&n)
	return n > 0, err
}

// retryFailedFlows is RetryFailed when failed jobs of flows or with
// concurrency limits may be among those retried: the jobs of neither are
// moved back, each flow of the others is retried whole (RetryFlow), and
// the limited ones are held again (retryHeld), in one transaction.
func (b *base) retryFailedFlows(ctx context.Context, after, upTo driver.FailedKey, limit int, now int64) (int, driver.FailedKey, error) {
	var n int
	from, last := fromFirst(after), after
	err := b.inFlow(ctx, nil, func(t *flowTx) error {
		n, last = 0, after
		rows, err := t.tx.QueryContext(ctx, t.d.Q(failedKeysFlows), from.FailedAt, from.ID, upTo.FailedAt, upTo.ID, limit)
		if err != nil {
			return err
		}
		var plain, limited, flows []string
		for rows.Next() {
			var flow string
			var held bool
			if err := rows.Scan(&last.FailedAt, &last.ID, &flow, &held); err != nil {
				rows.Close()
				return err
			}
			n++
			switch {
			case flow != "": // retried with its flow, held again if limited
				if !containsID(flows, flow) {
					flows = append(flows, flow)
				}
			case held:
				limited = append(limited, last.ID)
			default:
				plain = append(plain, last.ID)
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(plain) > 0 {
			moved, err := t.b.moveIn(t.ctx, t.tx, t.d.Q(retryIn+enteredColumns), now, sqlkit.List(plain))
			if err != nil {
				return err
			}
			queuesOf(moved, t.queues)
			if _, err := t.exec(failedDel, sqlkit.List(plain)); err != nil {
				return err
			}
		}
		for _, f := range flows {
			if _, err := retryFlow(t, f, now); err != nil {
				return err
			}
		}
		if len(limited) > 0 {
			return retryHeld(t, limited, now)
		}
		return nil
	})
	if err != nil {
		return 0, after, err
	}
	return n, last, nil
}
