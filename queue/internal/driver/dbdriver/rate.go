package dbdriver

import (
	"context"
	"database/sql"
	"strings"

	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/driver"
)

// Rate limits: their windows, their statements and the rounds of a
// reservation that does them are package rate's
// (queue/internal/control/rate); here the driver runs them.

// reserveRated is Reserve of a reservation with FeatureRate, or with a
// queue's own rate (Marks.Rate), in one transaction (rate.Reserve).
func (b *base) reserveRated(ctx context.Context, r driver.Reservation) ([]*driver.Job, error) {
	var jobs []*driver.Job
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		// The time of the reservation: the caller's, or on PostgreSQL nil
		// for the server's.
		at, err := b.at(ctx, r.At)
		if err == nil {
			jobs, err = rate.Reserve(ctx, tx, b.dialect(), at, r, b.search, sortReserved)
		}
		return err
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

// Meter implements driver.Driver.
func (b *base) Meter(ctx context.Context, key string, r driver.Rate, at int64) (int64, error) {
	var reopens int64
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		v, err := b.at(ctx, at)
		var now int64
		if err == nil {
			now, err = rate.Now(ctx, tx, v)
		}
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
