package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Rate limits: their windows and statements are package rate's
// (queue/internal/control/rate); here are the rounds of a reservation
// that does them, and the Driver's methods that run their statements.

// rateNow is the time of a reservation at at on the clock of
// reservations, as a number: at, or the driver's own clock for 0.
func (b *base) rateNow(ctx context.Context, tx *sql.Tx, at int64) (int64, error) {
	v, err := b.at(ctx, at)
	if err != nil {
		return 0, err
	}
	if n, ok := v.(int64); ok {
		return n, nil
	}
	var now int64
	err = tx.QueryRowContext(ctx, rate.PgNow).Scan(&now)
	return now, err
}

// ratedRounds bounds the searches of one Rated reservation: each after
// the first leaves out the keys whose window the one before filled.
const ratedRounds = 4

// reserveRated is Reserve of a reservation with FeatureRate, or with a
// QueueRate, in one transaction.
func (b *base) reserveRated(ctx context.Context, r driver.Reservation) ([]*driver.Job, error) {
	d := b.dialect()
	var jobs []*driver.Job
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		jobs = nil
		// The time of the reservation: the caller's, or on PostgreSQL the
		// server's, which the first search stamps its jobs with (read
		// first only for the queue's own window).
		at, err := b.at(ctx, r.At)
		if err != nil {
			return err
		}
		now, known := at.(int64)
		var w rate.Logs
		limit, queueKey, busy := r.Limit, driver.QueueKey(r.Queue), false
		if !r.QueueRate.IsZero() {
			if !known {
				if now, err = b.rateNow(ctx, tx, r.At); err != nil {
					return err
				}
				at, known = now, true
			}
			if _, err := rate.Lock(ctx, tx, d, []string{queueKey}, true); err != nil {
				return err
			}
			if err := w.ReadIn(ctx, tx, d, []string{queueKey}); err != nil {
				return err
			}
			limit = min(limit, w.Read[queueKey].Room(now, r.QueueRate))
		}
		for round := 0; round < ratedRounds && len(jobs) < limit; round++ {
			want := r
			want.Limit = limit - len(jobs)
			got, err := b.search(ctx, tx, at, want)
			if err != nil {
				return err
			}
			if len(got) == 0 {
				break
			}
			if !known {
				now, known = got[0].ReservedAt, true
				at = now
			}
			sortReserved(got)
			var keys []string
			for _, j := range got {
				if j.RateKey != "" && !j.Rate.IsZero() && w.Read[j.RateKey] == nil && !slices.Contains(keys, j.RateKey) {
					keys = append(keys, j.RateKey)
				}
			}
			locked, err := rate.Lock(ctx, tx, d, keys, false)
			if err != nil {
				return err
			}
			if err := w.ReadIn(ctx, tx, d, locked); err != nil {
				return err
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
				return err
			}
			if len(back) == 0 {
				break
			}
			if _, err := tx.ExecContext(ctx, d.Q(rate.GiveBack), sqlkit.List(back)); err != nil {
				return err
			}
		}
		if !r.QueueRate.IsZero() && len(jobs) > 0 {
			w.Read[queueKey].Take(now, r.QueueRate, len(jobs))
			w.Took(queueKey, r.QueueRate)
			if err := w.Save(ctx, tx, d, now); err != nil {
				return err
			}
		}
		if r.ReopensIn == nil || len(jobs) == r.Limit {
			return nil
		}
		*r.ReopensIn = 0
		var next sql.NullInt64
		query := d.Clocked(rate.NextReopen)
		if err := tx.QueryRowContext(ctx, query, at, at, queueKey, r.Queue).Scan(&next); err != nil {
			return err
		}
		*r.ReopensIn = next.Int64
		if busy { // another transaction takes room in a key's window: look again soon
			*r.ReopensIn = min(cmp.Or(*r.ReopensIn, busyRetryMs), busyRetryMs)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if r.Features&driver.FeatureFair != 0 {
		fair.Order(jobs)
	} else {
		sortReserved(jobs)
	}
	return jobs, nil
}

// busyRetryMs is how soon a reservation that left jobs waiting because
// another transaction held their key's lock looks again.
const busyRetryMs = 10

// Meter implements driver.Driver.
func (b *base) Meter(ctx context.Context, key string, r driver.Rate, at int64) (int64, error) {
	var reopens int64
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		now, err := b.rateNow(ctx, tx, at)
		if err == nil {
			reopens, err = rate.Meter(ctx, tx, b.dialect(), key, r, now)
		}
		return err
	})
	return reopens, err
}

// Throttles implements driver.Driver.
func (b *base) Throttles(ctx context.Context, queue string, at int64) ([]driver.Throttle, error) {
	v, err := b.at(ctx, at)
	if err != nil {
		return nil, err
	}
	query, args := rate.ThrottlesAll, []any{v}
	if queue != "" {
		query, args = rate.ThrottlesOf, []any{v, driver.QueueKey(queue), queue}
	}
	how := "throttles"
	if v == nil { // the server's clock
		how, args = "throttles now", args[1:]
	}
	query = b.d.Rendering(how, query, func(s string) string {
		if v == nil {
			s = strings.Replace(s, "r.reopen_at > ?", "r.reopen_at > ("+rate.PgNow+")", 1)
		}
		return b.d.Render(s + " ORDER BY reopen_at, key")
	})
	var out []driver.Throttle
	err = b.read(ctx, query, args, func(rows *sql.Rows) error {
		var t driver.Throttle
		if err := rows.Scan(&t.Key, &t.Rate.Max, &t.Rate.PerMs, &t.Reopens); err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// pruneRates is driver.UpkeepRates. It looks first, reading only.
func (b *base) pruneRates(ctx context.Context, at int64) error {
	v, err := b.at(ctx, at)
	if err != nil {
		return err
	}
	d := b.dialect()
	if found, err := b.exists(ctx, d.Clocked(rate.AnyEmpty), v); err != nil || !found {
		return err
	}
	prune := rate.Prune
	if d.PG {
		prune = d.Words(rate.PgPrune)
	}
	_, err = b.write(ctx, prune, v)
	return err
}
