package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"slices"

	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// scanJob reads a row of columns. A row whose values do not all convert
// to their types is read leniently (see readJob) rather than failing, so
// one corrupt row never fails the statement that returned it.
func scanJob(row scanner) (*driver.Job, error) {
	var j driver.Job
	var payload, stored string
	var uniqueKey, lastError, meta, flow, limitKey, rateKey sql.NullString
	var uniqueUntil, reservedAt, limitMax, rateMax, ratePer sql.NullInt64
	err := row.Scan(&j.ID, &j.Queue, &j.Name, &payload, &j.MaxAttempts, &stored, &j.TimeoutMs,
		&uniqueKey, &uniqueUntil, &j.Attempts, &j.AvailableAt, &reservedAt, &j.CreatedAt, &lastError, &meta, &flow, &j.Priority, &j.Snoozes,
		&limitKey, &limitMax, &rateKey, &rateMax, &ratePer)
	if err != nil {
		return readJob(row, err)
	}
	j.Payload = []byte(payload)
	if meta.Valid {
		j.Meta = []byte(meta.String)
	}
	j.UniqueKey, j.UniqueUntil, j.ReservedAt, j.LastError, j.Flow = uniqueKey.String, uniqueUntil.Int64, reservedAt.Int64, lastError.String, flow.String
	j.LimitKey, j.LimitMax = limitKey.String, int(limitMax.Int64)
	j.RateKey, j.Rate = rateKey.String, driver.Rate{Max: int(rateMax.Int64), PerMs: ratePer.Int64}
	setBackoff(&j, stored)
	return &j, nil
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
	var jobs []*driver.Job
	stmt := b.q.reserve
	if r.Prioritized {
		stmt = b.q.reservePrioritized
	}
	err = b.query(ctx, stmt, b.q.reserveArgs(at, r), func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		jobs = append(jobs, j)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		j.ReservedBy = r.By
	}
	sortReserved(jobs)
	return jobs, nil
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
func (b *base) Behind(ctx context.Context, queue string, now, from int64) (bool, error) {
	return b.exists(ctx, b.q.behind, queue, from, now)
}

// Prioritized implements driver.Driver.
func (b *base) Prioritized(ctx context.Context, queue string) (bool, error) {
	return b.exists(ctx, b.q.prioritized, queue)
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
