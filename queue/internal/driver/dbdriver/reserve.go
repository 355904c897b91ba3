package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// scanJob reads a row of columns. A row whose values do not all convert
// to their types is read leniently (see readJob) rather than failing, so
// one corrupt row never fails the statement that returned it.
func scanJob(row scanner) (*driver.Job, error) {
	// One value holds the job and what its nullable columns scan into:
	// the scan takes their addresses, so it goes to the heap once, not a
	// variable at a time.
	var r struct {
		j                                                            driver.Job
		payload, stored                                              string
		uniqueKey, lastError, meta, flow, limitKey, rateKey, fairKey sql.NullString
		uniqueUntil, reservedAt, limitMax, rateMax, ratePer, fairSeq sql.NullInt64
	}
	j := &r.j
	err := row.Scan(&j.ID, &j.Queue, &j.Name, &r.payload, &j.MaxAttempts, &r.stored, &j.TimeoutMs,
		&r.uniqueKey, &r.uniqueUntil, &j.Attempts, &j.AvailableAt, &r.reservedAt, &j.CreatedAt, &r.lastError, &r.meta, &r.flow, &j.Priority, &j.Snoozes,
		&r.limitKey, &r.limitMax, &r.rateKey, &r.rateMax, &r.ratePer, &r.fairKey, &r.fairSeq)
	if err != nil {
		return readJob(row, err)
	}
	j.Payload = []byte(r.payload)
	if r.meta.Valid {
		j.Meta = []byte(r.meta.String)
	}
	j.UniqueKey, j.UniqueUntil, j.ReservedAt, j.LastError, j.Flow = r.uniqueKey.String, r.uniqueUntil.Int64, r.reservedAt.Int64, r.lastError.String, r.flow.String
	j.LimitKey, j.LimitMax = r.limitKey.String, int(r.limitMax.Int64)
	j.RateKey, j.Rate = r.rateKey.String, driver.Rate{Max: int(r.rateMax.Int64), PerMs: r.ratePer.Int64}
	j.FairKey, j.FairSeq = r.fairKey.String, r.fairSeq.Int64
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
	if r.Rated || !r.QueueRate.IsZero() {
		return b.reserveRated(ctx, r)
	}
	if r.Fair {
		return b.reserveFair(ctx, nil, at, r, false)
	}
	var jobs []*driver.Job
	if b.q.reserveSized == nil {
		stmt := b.q.reserve
		if r.Prioritized {
			stmt = b.q.reservePrioritized
		}
		if jobs, err = b.reserveWith(ctx, b.only(stmt, r.Only), b.q.reserveArgs(at, r), nil); err != nil {
			return nil, err
		}
	} else {
		jobs, err = b.reserveSized(ctx, at, r)
	}
	for _, j := range jobs {
		j.ReservedBy = r.By
	}
	sortReserved(jobs)
	return jobs, err
}

// reserveSized reserves on PostgreSQL, by priority or by due time, with
// the statements of reserveSizes, until the limit is reached or one
// takes fewer than its size (the search found every job due). A
// statement that fails
// reserved nothing; the jobs of those before it are returned with its
// error, so that they run rather than wait for their takeover.
func (b *base) reserveSized(ctx context.Context, at any, r driver.Reservation) ([]*driver.Job, error) {
	args, sized := b.q.sizedArgs(at, r), b.q.reserveSized
	if r.Prioritized {
		sized = b.q.prioritizedSized
	}
	var jobs []*driver.Job
	for left := r.Limit; left > 0; {
		size, before := sizedReservation(left), len(jobs)
		more, err := b.reserveWith(ctx, b.only(sized[size], r.Only), args, jobs)
		if err != nil {
			return jobs[:before], err
		}
		jobs = more
		if took := len(jobs) - before; took < size {
			break
		}
		left -= size
	}
	return jobs, nil
}

// reserveWith runs the reservation stmt with args and appends the jobs it
// reserved to jobs.
func (b *base) reserveWith(ctx context.Context, stmt string, args []any, jobs []*driver.Job) ([]*driver.Job, error) {
	err := b.query(ctx, stmt, args, func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		jobs = append(jobs, j)
		return err
	})
	return jobs, err
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
	var j *driver.Job
	err = b.query(ctx, b.q.takeOver, append([]any{at, nullable(by), queue}, atArgs(at)...), func(rows *sql.Rows) (err error) {
		j, err = scanJob(rows)
		return err
	})
	if j != nil {
		j.ReservedBy = by
	}
	return j, err
}

// Behind implements driver.Driver.
func (b *base) Behind(ctx context.Context, queue string, now, from, placeFrom int64, only *driver.Names) (bool, error) {
	if from > 0 {
		if found, err := b.exists(ctx, b.only(b.q.behind, only), queue, from, now); err != nil || found {
			return found, err
		}
	}
	if placeFrom > 0 {
		return b.exists(ctx, b.only(b.q.words(placeBehind), only), queue, placeFrom, now)
	}
	return false, nil
}

// only is the search stmt limited to the jobs of the types of n (nil:
// stmt): each of its searches of waiting jobs ("reserved_at IS NULL")
// also tests the job's type against n, written into the statement as
// standard string literals (a quote doubled; PostgreSQL reads them so
// with standard_conforming_strings, on by default), so that its
// arguments stay as they are. The statement is built once for each pair
// and kept.
func (b *base) only(stmt string, n *driver.Names) string {
	if n == nil {
		return stmt
	}
	key := onlyKey{stmt, n}
	if s, ok := b.limited.Load(key); ok {
		return s.(string)
	}
	test := "1 = 0" // no type: no job
	if list := n.List(); len(list) > 0 {
		quoted := make([]string, len(list))
		for i, name := range list {
			quoted[i] = "'" + strings.ReplaceAll(name, "'", "''") + "'"
		}
		test = "name IN (" + strings.Join(quoted, ", ") + ")"
	}
	s, _ := b.limited.LoadOrStore(key, strings.ReplaceAll(stmt, "reserved_at IS NULL", "reserved_at IS NULL AND "+test))
	return s.(string)
}

// onlyKey names a statement of only.
type onlyKey struct {
	stmt  string
	names *driver.Names
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

// nullable is s, or NULL for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
