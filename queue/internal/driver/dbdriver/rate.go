package dbdriver

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// Rate limits (see driver.Job.RateKey). Each key's window is a row of
// queue_rates (driver.Window, as text), read and written by the
// transaction of a reservation: its search leaves out the keys whose
// window is full (reopen_at after now), and of the jobs it reserved it
// gives back, in the same transaction, those over their key's room, so
// that a job over its limit is never seen reserved and spends no
// attempt. On PostgreSQL a transaction takes a key's lock (an advisory
// lock) before it reads the key's window: the queue's own key waiting
// for it, the keys of the jobs it reserved without waiting (a key whose
// lock another holds keeps its jobs waiting this time), so that it never
// waits holding another key's lock, and two never wait for each other.
// The prune of empty windows takes only the rows no reservation holds,
// so that it never waits for one either. On SQLite every write
// transaction holds the file's write lock.

// The statements of rate limits, in SQLite's words with KEYS for a list
// of keys.
const (
	windowsOf = "SELECT key, log FROM queue_rates WHERE key IN KEYS"
	// The windows written back, in one statement, from a JSON array of
	// objects.
	windowSave = "INSERT INTO queue_rates (key, log, reopen_at, empty_at, rate_max, rate_per) ROWS " +
		"ON CONFLICT (key) DO UPDATE SET log = excluded.log, reopen_at = excluded.reopen_at, empty_at = excluded.empty_at, " +
		"rate_max = excluded.rate_max, rate_per = excluded.rate_per"
	pgWindowRows     = "SELECT k, l, r, e, m, p FROM jsonb_to_recordset(?::jsonb) AS w(k text, l text, r bigint, e bigint, m int, p bigint)"
	sqliteWindowRows = "SELECT json_extract(value, '$.k'), json_extract(value, '$.l'), json_extract(value, '$.r'), json_extract(value, '$.e'), " +
		"json_extract(value, '$.m'), json_extract(value, '$.p') FROM json_each(?) WHERE true"
	giveBack = "UPDATE jobs SET reserved_at = NULL, reserved_by = NULL, attempts = attempts - 1 WHERE id IN LIST"
	// ofQueue keeps the windows of a queue: its own, and those of the
	// keys whose jobs wait on it; its arguments are the queue's key and
	// the queue.
	ofQueue = " AND (r.key = ? OR EXISTS (SELECT 1 FROM jobs j WHERE j.queue = ? AND j.rate_key = r.key AND j.reserved_at IS NULL))"
	// nextReopen is how long until the first full window of a queue
	// reopens, at AT (twice).
	nextReopen = "SELECT min(r.reopen_at) - AT FROM queue_rates r WHERE r.reopen_at > AT" + ofQueue
	// throttlesAll and throttlesOf list the full windows at a time, of
	// every queue or of one.
	throttlesAll = "SELECT key, rate_max, rate_per, reopen_at FROM queue_rates r WHERE r.reopen_at > ?"
	throttlesOf  = throttlesAll + ofQueue
	pruneRates   = "DELETE FROM queue_rates WHERE empty_at <= ?"
	pgNow        = "SELECT (extract(epoch from statement_timestamp()) * 1000)::bigint"
	// The locks of rate keys on PostgreSQL: waiting for them, or taking
	// those free (returning them).
	pgRateLock    = "SELECT pg_advisory_xact_lock(hashtextextended('navree_rate:' || k, 0)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k"
	pgRateTryLock = "SELECT k FROM jsonb_array_elements_text($1::jsonb) AS k WHERE pg_try_advisory_xact_lock(hashtextextended('navree_rate:' || k, 0))"
)

// windows holds the windows a transaction read, by key, and the rates of
// those it took room in.
type windows struct {
	read  map[string]*driver.Window
	taken map[string]driver.Rate
}

// readWindows reads the windows of keys in tx.
func readWindows(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys []string, into *windows) error {
	if into.read == nil {
		into.read, into.taken = map[string]*driver.Window{}, map[string]driver.Rate{}
	}
	for _, k := range keys {
		into.read[k] = &driver.Window{}
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, d.Keys(windowsOf), sqlkit.List(keys))
	return sqlkit.EachRow(rows, err, func(rows *sql.Rows) error {
		var key, log string
		if err := rows.Scan(&key, &log); err != nil {
			return err
		}
		w := driver.ParseWindow(log)
		into.read[key] = &w
		return nil
	})
}

// savedWindow is a window as windowSave reads it.
type savedWindow struct {
	Key     string `json:"k"`
	Log     string `json:"l"`
	Reopens int64  `json:"r"`
	Empties int64  `json:"e"`
	Max     int    `json:"m"`
	PerMs   int64  `json:"p"`
}

// save writes the windows taken, as of now, in one statement.
func (w *windows) save(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, now int64) error {
	if len(w.taken) == 0 {
		return nil
	}
	rows := make([]savedWindow, 0, len(w.taken))
	for _, key := range slices.Sorted(maps.Keys(w.taken)) {
		win, r := w.read[key], w.taken[key]
		rows = append(rows, savedWindow{key, win.String(), win.Reopens(now, r), win.Empties(r), r.Max, r.PerMs})
	}
	clear(w.taken)
	list, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	query := d.Rendering("window rows", windowSave, func(s string) string {
		if d.PG {
			return d.Render(strings.Replace(s, "ROWS", pgWindowRows, 1))
		}
		return strings.Replace(s, "ROWS", sqliteWindowRows, 1)
	})
	_, err = tx.ExecContext(ctx, query, string(list))
	return err
}

// lockRates takes the locks of keys on PostgreSQL: waiting for them, or,
// free only, those free, which it returns; on SQLite all of them.
func lockRates(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys []string, wait bool) ([]string, error) {
	if !d.PG || len(keys) == 0 {
		return keys, nil
	}
	if wait {
		_, err := tx.ExecContext(ctx, pgRateLock, sqlkit.List(sqlkit.Distinct(keys)))
		return keys, err
	}
	return sqlkit.Texts(ctx, tx, pgRateTryLock, sqlkit.List(sqlkit.Distinct(keys)))
}

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
	err = tx.QueryRowContext(ctx, pgNow).Scan(&now)
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
		var w windows
		limit, queueKey, busy := r.Limit, driver.QueueKey(r.Queue), false
		if !r.QueueRate.IsZero() {
			if !known {
				if now, err = b.rateNow(ctx, tx, r.At); err != nil {
					return err
				}
				at, known = now, true
			}
			if _, err := lockRates(ctx, tx, d, []string{queueKey}, true); err != nil {
				return err
			}
			if err := readWindows(ctx, tx, d, []string{queueKey}, &w); err != nil {
				return err
			}
			limit = min(limit, w.read[queueKey].Room(now, r.QueueRate))
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
				if j.RateKey != "" && !j.Rate.IsZero() && w.read[j.RateKey] == nil && !slices.Contains(keys, j.RateKey) {
					keys = append(keys, j.RateKey)
				}
			}
			locked, err := lockRates(ctx, tx, d, keys, false)
			if err != nil {
				return err
			}
			if err := readWindows(ctx, tx, d, locked, &w); err != nil {
				return err
			}
			var back []string
			for _, j := range got {
				if j.RateKey != "" && !j.Rate.IsZero() {
					win := w.read[j.RateKey]
					if win == nil || win.Take(now, j.Rate, 1) == 0 {
						busy = busy || win == nil
						back = append(back, j.ID)
						continue
					}
					w.taken[j.RateKey] = j.Rate
				}
				j.ReservedBy = r.By
				jobs = append(jobs, j)
			}
			if err := w.save(ctx, tx, d, now); err != nil {
				return err
			}
			if len(back) == 0 {
				break
			}
			if _, err := tx.ExecContext(ctx, d.Q(giveBack), sqlkit.List(back)); err != nil {
				return err
			}
		}
		if !r.QueueRate.IsZero() && len(jobs) > 0 {
			w.read[queueKey].Take(now, r.QueueRate, len(jobs))
			w.taken[queueKey] = r.QueueRate
			if err := w.save(ctx, tx, d, now); err != nil {
				return err
			}
		}
		if r.ReopensIn == nil || len(jobs) == r.Limit {
			return nil
		}
		*r.ReopensIn = 0
		var next sql.NullInt64
		query := d.Clocked(nextReopen)
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
		driver.FairOrder(jobs)
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
	d := b.dialect()
	var reopens int64
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		reopens = 0
		now, err := b.rateNow(ctx, tx, at)
		if err != nil {
			return err
		}
		if _, err := lockRates(ctx, tx, d, []string{key}, true); err != nil {
			return err
		}
		var w windows
		if err := readWindows(ctx, tx, d, []string{key}, &w); err != nil {
			return err
		}
		if w.read[key].Take(now, r, 1) == 0 {
			reopens = w.read[key].Reopens(now, r) - now
			return nil
		}
		w.taken[key] = r
		return w.save(ctx, tx, d, now)
	})
	return reopens, err
}

// Throttles implements driver.Driver.
func (b *base) Throttles(ctx context.Context, queue string, at int64) ([]driver.Throttle, error) {
	v, err := b.at(ctx, at)
	if err != nil {
		return nil, err
	}
	query, args := throttlesAll, []any{v}
	if queue != "" {
		query, args = throttlesOf, []any{v, driver.QueueKey(queue), queue}
	}
	how := "throttles"
	if v == nil { // the server's clock
		how, args = "throttles now", args[1:]
	}
	query = b.d.Rendering(how, query, func(s string) string {
		if v == nil {
			s = strings.Replace(s, "r.reopen_at > ?", "r.reopen_at > ("+pgNow+")", 1)
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

// PruneRates implements driver.Driver. It looks first, reading only: a
// process that uses no rate limits writes nothing (on SQLite a write
// holds the file's lock, even one that deletes nothing).
func (b *base) PruneRates(ctx context.Context, at int64) error {
	v, err := b.at(ctx, at)
	if err != nil {
		return err
	}
	d := b.dialect()
	if found, err := b.exists(ctx, d.Clocked("SELECT 1 FROM queue_rates WHERE empty_at <= AT LIMIT 1"), v); err != nil || !found {
		return err
	}
	if d.PG {
		// Only the rows no reservation holds: one that writes a window
		// (holding its row) may wait for the prune, never the prune for it,
		// so that the two never deadlock.
		_, err = b.write(ctx, d.Words("DELETE FROM queue_rates WHERE key IN (SELECT key FROM queue_rates WHERE empty_at <= "+sqlkit.PgAt+" FOR UPDATE SKIP LOCKED)"), v)
		return err
	}
	_, err = b.write(ctx, pruneRates, v)
	return err
}
