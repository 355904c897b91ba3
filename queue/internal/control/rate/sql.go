package rate

import (
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
// queue_rates (Window, as text), read and written by the
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
		"json_extract(value, '$.m'), json_extract(value, '$.p') FROM jsonb_each(?) WHERE true"
	GiveBack = "UPDATE jobs SET reserved_at = NULL, reserved_by = NULL, attempts = attempts - 1 WHERE id IN LIST"
	// ofQueue keeps the windows of a queue: its own, and those of the
	// keys whose jobs wait on it; its arguments are the queue's key and
	// the queue.
	ofQueue = " AND (r.key = ? OR EXISTS (SELECT 1 FROM jobs j WHERE j.queue = ? AND j.rate_key = r.key AND j.reserved_at IS NULL))"
	// NextReopen is how long until the first full window of a queue
	// reopens, at AT (twice).
	NextReopen = "SELECT min(r.reopen_at) - AT FROM queue_rates r WHERE r.reopen_at > AT" + ofQueue
	// ThrottlesAll and ThrottlesOf list the full windows at a time, of
	// every queue or of one.
	ThrottlesAll = "SELECT key, rate_max, rate_per, reopen_at FROM queue_rates r WHERE r.reopen_at > ?"
	ThrottlesOf  = ThrottlesAll + ofQueue
	// AnyEmpty finds a window empty at AT; Prune deletes them, and on
	// PostgreSQL PgPrune only those no reservation holds: one that writes
	// a window (holding its row) may wait for the prune, never the prune
	// for it, so that the two never deadlock.
	AnyEmpty = "SELECT 1 FROM queue_rates WHERE empty_at <= AT LIMIT 1"
	Prune    = "DELETE FROM queue_rates WHERE empty_at <= ?"
	PgPrune  = "DELETE FROM queue_rates WHERE key IN (SELECT key FROM queue_rates WHERE empty_at <= " + sqlkit.PgAt + " FOR UPDATE SKIP LOCKED)"
	PgNow    = "SELECT (extract(epoch from statement_timestamp()) * 1000)::bigint"
	// The locks of rate keys on PostgreSQL: waiting for them, or taking
	// those free (returning them).
	pgRateLock    = "SELECT pg_advisory_xact_lock(hashtextextended('navree_rate:' || k, 0)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k"
	pgRateTryLock = "SELECT k FROM jsonb_array_elements_text($1::jsonb) AS k WHERE pg_try_advisory_xact_lock(hashtextextended('navree_rate:' || k, 0))"
)

// Logs hold the windows a transaction read, by key (Read: nil for a key
// it has not read), and the rates of those it took room in since it last
// saved them.
type Logs struct {
	Read  map[string]*Window
	taken map[string]driver.Rate
}

// ReadIn reads the windows of keys in tx.
func (into *Logs) ReadIn(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys []string) error {
	if into.Read == nil {
		into.Read, into.taken = map[string]*Window{}, map[string]driver.Rate{}
	}
	for _, k := range keys {
		into.Read[k] = &Window{}
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
		w := ParseWindow(log)
		into.Read[key] = &w
		return nil
	})
}

// Took notes that the transaction took room in key's window under r:
// Save writes it.
func (w *Logs) Took(key string, r driver.Rate) { w.taken[key] = r }

// savedWindow is a window as windowSave reads it.
type savedWindow struct {
	Key     string `json:"k"`
	Log     string `json:"l"`
	Reopens int64  `json:"r"`
	Empties int64  `json:"e"`
	Max     int    `json:"m"`
	PerMs   int64  `json:"p"`
}

// Save writes the windows taken, as of now, in one statement.
func (w *Logs) Save(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, now int64) error {
	if len(w.taken) == 0 {
		return nil
	}
	rows := make([]savedWindow, 0, len(w.taken))
	for _, key := range slices.Sorted(maps.Keys(w.taken)) {
		win, r := w.Read[key], w.taken[key]
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

// Lock takes the locks of keys on PostgreSQL: waiting for them, or,
// free only, those free, which it returns; on SQLite all of them.
func Lock(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys []string, wait bool) ([]string, error) {
	if !d.PG || len(keys) == 0 {
		return keys, nil
	}
	if wait {
		_, err := tx.ExecContext(ctx, pgRateLock, sqlkit.List(sqlkit.Distinct(keys)))
		return keys, err
	}
	return sqlkit.Texts(ctx, tx, pgRateTryLock, sqlkit.List(sqlkit.Distinct(keys)))
}

// Meter is driver.Driver's Meter in tx at now: it takes one start of
// key's window under r, or says how long until the window reopens.
func Meter(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, key string, r driver.Rate, now int64) (int64, error) {
	if _, err := Lock(ctx, tx, d, []string{key}, true); err != nil {
		return 0, err
	}
	var w Logs
	if err := w.ReadIn(ctx, tx, d, []string{key}); err != nil {
		return 0, err
	}
	if w.Read[key].Take(now, r, 1) == 0 {
		return w.Read[key].Reopens(now, r) - now, nil
	}
	w.Took(key, r)
	return 0, w.Save(ctx, tx, d, now)
}
