package rate

import (
	"cmp"
	"context"
	"database/sql"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// rounds bounds the searches of one reservation that does rate limits:
// each after the first leaves out the keys whose window the one before
// filled.
const rounds = 4

// busyRetryMs is how soon a reservation that left jobs waiting because
// another transaction held their key's lock looks again.
const busyRetryMs = 10

// A Search reserves up to r.Limit jobs of r in tx at at, as the
// database driver's search of a reservation's plan does, in any order.
type Search func(ctx context.Context, tx *sql.Tx, at any, r driver.Reservation) ([]*driver.Job, error)

// Now is the time at on the clock of reservations as a number: at
// itself, or for nil (PostgreSQL's clock) the server's, read in tx.
func Now(ctx context.Context, tx *sql.Tx, at any) (int64, error) {
	if n, ok := at.(int64); ok {
		return n, nil
	}
	var now int64
	err := tx.QueryRowContext(ctx, PgNow).Scan(&now)
	return now, err
}

// Reserve is a reservation with driver.FeatureRate, or with a queue's own rate,
// in tx, at at (an int64, or nil for PostgreSQL's clock): rounds of
// search, each of which takes room in the windows of the keys of the
// jobs it found, in the order sorts them into, and gives back in tx those
// over their limit; the queue's own window (its Marks' Rate) bounds how
// many it takes, and takes room for those. It reports in r.Marks when the
// next window reopens, when it took fewer than r.Limit.
func Reserve(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, at any, r driver.Reservation, search Search, order func([]*driver.Job)) ([]*driver.Job, error) {
	var (
		jobs  []*driver.Job
		w     Logs
		now   int64
		err   error
		known bool
	)
	queueRate := r.QueueRate()
	if now, known = at.(int64); !known && !queueRate.IsZero() {
		// The server's clock, which the first search stamps its jobs
		// with, read first only for the queue's own window.
		if now, err = Now(ctx, tx, at); err != nil {
			return nil, err
		}
		at, known = now, true
	}
	limit, queueKey, busy := r.Limit, driver.QueueKey(r.Queue), false
	if !queueRate.IsZero() {
		if _, err := Lock(ctx, tx, d, []string{queueKey}, true); err != nil {
			return nil, err
		}
		if err := w.ReadIn(ctx, tx, d, []string{queueKey}); err != nil {
			return nil, err
		}
		limit = min(limit, w.Read[queueKey].Room(now, queueRate))
	}
	for round := 0; round < rounds && len(jobs) < limit; round++ {
		want := r
		want.Limit = limit - len(jobs)
		got, err := search(ctx, tx, at, want)
		if err != nil {
			return nil, err
		}
		if len(got) == 0 {
			break
		}
		if !known {
			now, known = got[0].ReservedAt, true
			at = now
		}
		order(got)
		var keys []string
		for _, j := range got {
			if j.RateKey != "" && !j.Rate.IsZero() && w.Read[j.RateKey] == nil && !slices.Contains(keys, j.RateKey) {
				keys = append(keys, j.RateKey)
			}
		}
		locked, err := Lock(ctx, tx, d, keys, false)
		if err != nil {
			return nil, err
		}
		if err := w.ReadIn(ctx, tx, d, locked); err != nil {
			return nil, err
		}
		var back []string
		for _, j := range got {
			if j.RateKey != "" && !j.Rate.IsZero() {
				win := w.Read[j.RateKey]
				if win == nil || win.Take(now, j.Rate, 1) == 0 {
					busy = busy || win == nil
					back = append(back, j.ID)
					continue
				}
				w.Took(j.RateKey, j.Rate)
			}
			j.ReservedBy = r.By
			jobs = append(jobs, j)
		}
		if err := w.Save(ctx, tx, d, now); err != nil {
			return nil, err
		}
		if len(back) == 0 {
			break
		}
		if _, err := tx.ExecContext(ctx, d.Q(GiveBack), sqlkit.List(back)); err != nil {
			return nil, err
		}
	}
	if !queueRate.IsZero() && len(jobs) > 0 {
		w.Read[queueKey].Take(now, queueRate, len(jobs))
		w.Took(queueKey, queueRate)
		if err := w.Save(ctx, tx, d, now); err != nil {
			return nil, err
		}
	}
	if r.Marks == nil || len(jobs) == r.Limit {
		return jobs, nil
	}
	r.Marks.ReopensIn = 0
	var next sql.NullInt64
	if err := tx.QueryRowContext(ctx, d.Clocked(NextReopen), at, at, queueKey, r.Queue).Scan(&next); err != nil {
		return nil, err
	}
	r.Marks.ReopensIn = next.Int64
	if busy { // another transaction takes room in a key's window: look again soon
		r.Marks.ReopensIn = min(cmp.Or(r.Marks.ReopensIn, busyRetryMs), busyRetryMs)
	}
	return jobs, nil
}
