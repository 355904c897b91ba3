package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"slices"

	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/plan"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// scanJob reads a row of columns. A row whose values do not all convert
// to their types is read leniently (see readJob) rather than failing, so
// one corrupt row never fails the statement that returned it.
func scanJob(row scanner) (*driver.Job, error) {
	// One value holds the job and what its nullable columns scan into:
	// the scan takes their addresses, so it goes to the heap once, not a
	// variable at a time.
	var r struct {
		j                                                                      driver.Job
		payload, stored                                                        string
		uniqueKey, lastError, meta, flow, limitKey, rateKey, fairKey, controls sql.NullString
		uniqueUntil, reservedAt, fairSeq                                       sql.NullInt64
	}
	j := &r.j
	err := row.Scan(&j.ID, &j.Queue, &j.Name, &r.payload, &j.MaxAttempts, &r.stored, &j.TimeoutMs,
		&r.uniqueKey, &r.uniqueUntil, &j.Attempts, &j.AvailableAt, &r.reservedAt, &j.CreatedAt, &r.lastError, &r.meta, &r.flow, &j.Priority, &j.Snoozes,
		&r.limitKey, &r.rateKey, &r.fairKey, &r.fairSeq, &r.controls)
	if err != nil {
		return readJob(row, err)
	}
	j.Payload = []byte(r.payload)
	if r.meta.Valid {
		j.Meta = []byte(r.meta.String)
	}
	j.UniqueKey, j.UniqueUntil, j.ReservedAt, j.LastError, j.Flow = r.uniqueKey.String, r.uniqueUntil.Int64, r.reservedAt.Int64, r.lastError.String, r.flow.String
	j.LimitKey, j.RateKey, j.FairKey, j.FairSeq = r.limitKey.String, r.rateKey.String, r.fairKey.String, r.fairSeq.Int64
	if r.controls.Valid {
		var rd reading
		c := rd.settings(r.controls.String)
		j.LimitMax, j.Rate, j.Corrupt = c.LimitMax, c.Rate(), rd.problem
	}
	setBackoff(j, r.stored)
	return j, nil
}

// setBackoff reads a job's stored backoff, keeping the text when it does
// not parse.
func setBackoff(j *driver.Job, stored string) {
	var err error
	if j.Backoff, err = backoff.Parse(stored); err != nil {
		j.BadBackoff = stored
	}
}

// Reserve implements driver.Driver.
func (b *base) Reserve(ctx context.Context, r driver.Reservation) ([]*driver.Job, error) {
	at, err := b.at(ctx, r.At)
	if err != nil {
		return nil, err
	}
	if r.Does()&driver.FeatureRate != 0 {
		return b.reserveRated(ctx, r)
	}
	jobs, err := b.search(ctx, nil, at, r)
	if r.Features&driver.FeatureFair != 0 {
		fair.Order(jobs)
		if err == nil && r.Marks != nil {
			r.Marks.Drained = fair.Drained(jobs, r.Limit)
		}
	} else {
		sortReserved(jobs)
	}
	return jobs, err
}

// search reserves the jobs of r at at (on PostgreSQL nil for the
// server's clock) by the statement of its shape (see package plan), in
// tx, or for nil in a transaction of its own.
func (b *base) search(ctx context.Context, tx *sql.Tx, at any, r driver.Reservation) ([]*driver.Job, error) {
	if r.Limit <= 0 {
		return nil, nil
	}
	shape, v := b.reservation(at, r)
	if b.dialect().PG {
		shape.Size = plan.SizeFor(r.Limit)
	}
	st := b.plans.Reservation(shape)
	var jobs []*driver.Job
	row := func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		if err == nil {
			j.ReservedBy = r.By
			jobs = append(jobs, j)
		}
		return err
	}
	var err error
	if tx != nil {
		rows, qerr := tx.QueryContext(ctx, st.SQL, st.Bind(&v)...)
		err = sqlkit.EachRow(rows, qerr, row)
	} else {
		err = b.query(ctx, st.SQL, st.Bind(&v), row)
	}
	if err != nil { // the statement reserved nothing
		return nil, err
	}
	return jobs, nil
}

// reservation is the shape of the reservation r at at and its
// arguments.
func (b *base) reservation(at any, r driver.Reservation) (plan.Shape, plan.Values) {
	shape := plan.Shape{Features: r.Does(), Only: r.Only != nil}
	v := plan.Values{plan.Queue: r.Queue, plan.Does: r.Does(), plan.From: r.From, plan.Now: r.Now, plan.Place: max(r.Place(), 1),
		plan.At: at, plan.By: sqlkit.Nullable(r.By), plan.Limit: r.Limit}
	if r.Only != nil {
		v[plan.Names] = b.names(r.Only)
	}
	return shape, v
}

// names is the argument of the job types of n (plan.Names): a JSON array
// on SQLite, a list on PostgreSQL.
func (b *base) names(n *driver.Names) any {
	if b.dialect().PG {
		return n.List()
	}
	return n.JSON()
}

// sortReserved puts jobs in the order of reservations: RETURNING gives
// none.
func sortReserved(jobs []*driver.Job) {
	slices.SortFunc(jobs, func(a, b *driver.Job) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
	})
}

// TakeOver implements driver.Driver.
func (b *base) TakeOver(ctx context.Context, queue string, now int64, by string) (*driver.Job, error) {
	at, err := b.at(ctx, now)
	if err != nil {
		return nil, err
	}
	args := append([]any{at, sqlkit.Nullable(by), queue}, atArgs(at)...)
	for {
		var j *driver.Job
		full := false
		err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, b.q.takeOver, args...)
			err = sqlkit.EachRow(rows, err, func(rows *sql.Rows) (err error) {
				j, err = scanJob(rows)
				return err
			})
			if err != nil || j == nil || j.RateKey == "" || j.Rate.IsZero() {
				return err
			}
			// A restart is a start: it takes room in its window, or waits
			// for the rated search as if never taken over (its dead
			// attempt counted).
			t, err := rate.Now(ctx, tx, at)
			var wait int64
			if err == nil {
				wait, err = rate.Meter(ctx, tx, b.dialect(), j.RateKey, j.Rate, t)
			}
			if err != nil || wait == 0 {
				return err
			}
			full = true
			_, err = tx.ExecContext(ctx, b.q.unreserve, j.ID, j.Attempts)
			return err
		})
		switch {
		case err != nil:
			return nil, err
		case full: // the next stale job, if any
		case j == nil:
			return nil, nil
		default:
			j.ReservedBy = by
			return j, nil
		}
	}
}

// Behind implements driver.Driver.
func (b *base) Behind(ctx context.Context, queue string, now, from, placeFrom int64, only *driver.Names) (bool, error) {
	v := plan.Values{plan.Queue: queue, plan.Now: now, plan.From: from, plan.Place: placeFrom}
	if only != nil {
		v[plan.Names] = b.names(only)
	}
	if from > 0 {
		st := b.plans.Behind(false, only != nil)
		if found, err := b.exists(ctx, st.SQL, st.Bind(&v)...); err != nil || found {
			return found, err
		}
	}
	if placeFrom > 0 {
		st := b.plans.Behind(true, only != nil)
		return b.exists(ctx, st.SQL, st.Bind(&v)...)
	}
	return false, nil
}

// Stale implements driver.Driver.
func (b *base) Stale(ctx context.Context, queue string, now int64) (bool, error) {
	at, err := b.at(ctx, now)
	if err != nil {
		return false, err
	}
	return b.exists(ctx, b.q.stale, append([]any{queue}, atArgs(at)...)...)
}

// Unreserve implements driver.Driver.
func (b *base) Unreserve(ctx context.Context, id string, attempt int) (bool, error) {
	return b.exec(ctx, b.q.unreserve, id, attempt)
}

// Snooze implements driver.Driver.
func (b *base) Snooze(ctx context.Context, id string, attempt int, availableAt int64) (bool, error) {
	return b.exec(ctx, b.q.snooze, availableAt, id, attempt)
}
