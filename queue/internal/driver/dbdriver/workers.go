package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// workerStatements are the registry's statements, at being a time on the
// clock of reservations in the database's words.
type workerStatements struct{ heartbeat, held, forget, deregister, list, now, restart string }

// newWorkerStatements builds the registry's statements; held reads which
// of the jobs whose ids are in a JSON array are reserved, and their
// attempts.
func newWorkerStatements(at, held string, words func(string) string) workerStatements {
	return workerStatements{
		heartbeat: words("INSERT INTO queue_workers (id, kind, host, pid, queues, concurrency, version, started_at, heartbeat_at, running, rescue_ms) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, " + at + ", ?, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, running = excluded.running RETURNING restart_at"),
		held:       held,
		forget:     words("DELETE FROM queue_workers WHERE heartbeat_at < " + at + " - " + strconv.Itoa(driver.GoneForgottenMs)),
		deregister: words("DELETE FROM queue_workers WHERE id = ?"),
		list:       words("SELECT " + workerColumns + ", " + at + " FROM queue_workers ORDER BY started_at, id"),
		restart:    words("UPDATE queue_workers SET restart_at = ? WHERE restart_at IS NULL RETURNING " + workerColumns),
		now:        words("SELECT " + at),
	}
}

// workerColumns are a registered worker's, as scanWorker reads them.
const workerColumns = "id, kind, host, pid, queues, concurrency, version, started_at, heartbeat_at, running, rescue_ms, restart_at"

// scanWorker reads a row of workerColumns, and then into more.
func scanWorker(rows *sql.Rows, more ...any) (driver.Worker, error) {
	var w driver.Worker
	var queues string
	var restart sql.NullInt64
	err := rows.Scan(append([]any{&w.ID, &w.Kind, &w.Host, &w.PID, &queues, &w.Concurrency, &w.Version, &w.StartedAt, &w.HeartbeatAt, &w.Running,
		&w.RescueMs, &restart}, more...)...)
	if queues != "" {
		w.Queues = strings.Split(queues, ",")
	}
	w.RestartAt = restart.Int64
	return w, err
}

// Heartbeat implements driver.Driver.
func (b *base) Heartbeat(ctx context.Context, w driver.Worker, now int64, running []driver.Attempt) (driver.Beat, error) {
	var beat driver.Beat
	at, err := b.at(ctx, now)
	if err != nil {
		return beat, err
	}
	err = b.query(ctx, b.w.heartbeat, []any{w.ID, w.Kind, w.Host, w.PID, strings.Join(w.Queues, ","), w.Concurrency, w.Version, w.StartedAt, at, w.Running, w.RescueMs},
		func(rows *sql.Rows) error {
			var restart sql.NullInt64
			err := rows.Scan(&restart)
			beat.Restart = restart.Valid
			return err
		})
	if err != nil {
		return beat, err
	}
	if _, err = b.write(ctx, b.w.forget, at); err != nil || len(running) == 0 {
		return beat, err
	}
	ids := make([]string, len(running))
	for i, a := range running {
		ids[i] = a.ID
	}
	list, _ := json.Marshal(ids)
	held := make(map[string]int, len(running))
	err = b.read(ctx, b.w.held, []any{string(list)}, func(rows *sql.Rows) error {
		var id string
		var attempts int
		err := rows.Scan(&id, &attempts)
		held[id] = attempts
		return err
	})
	if err != nil {
		return beat, err
	}
	for _, a := range running {
		if n, ok := held[a.ID]; !ok || n != a.Attempt {
			beat.Lost = append(beat.Lost, a)
		}
	}
	return beat, nil
}

// Restart implements driver.Driver.
func (b *base) Restart(ctx context.Context, now int64) ([]driver.Worker, error) {
	var asked []driver.Worker
	err := b.query(ctx, b.w.restart, []any{now}, func(rows *sql.Rows) error {
		w, err := scanWorker(rows)
		asked = append(asked, w)
		return err
	})
	slices.SortFunc(asked, driver.ByStart)
	return asked, err
}

// Deregister implements driver.Driver.
func (b *base) Deregister(ctx context.Context, id string) error {
	_, err := b.write(ctx, b.w.deregister, id)
	return err
}

// Workers implements driver.Driver.
func (b *base) Workers(ctx context.Context, now int64) ([]driver.Worker, int64, error) {
	at, err := b.at(ctx, now)
	if err != nil {
		return nil, 0, err
	}
	var out []driver.Worker
	var clock int64
	err = b.read(ctx, b.w.list, []any{at}, func(rows *sql.Rows) error {
		w, err := scanWorker(rows, &clock)
		out = append(out, w)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if len(out) == 0 { // no row to read the clock from
		if clock, err = b.clockAt(ctx, at); err != nil {
			return nil, 0, err
		}
	}
	return out, clock, nil
}

// clockAt reads the time at stands for: itself, or the database's.
func (b *base) clockAt(ctx context.Context, at any) (int64, error) {
	if t, ok := at.(int64); ok {
		return t, nil
	}
	var t int64
	err := b.sqldb.QueryRowContext(ctx, b.w.now, at).Scan(&t)
	return t, err
}
