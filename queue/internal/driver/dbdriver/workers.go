package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// workerStatements are the registry's statements, at being a time on the
// clock of reservations in the database's words.
type workerStatements struct{ heartbeat, held, forget, deregister, list, now string }

// newWorkerStatements builds the registry's statements; held reads which
// of the jobs whose ids are in a JSON array are reserved, and their
// attempts.
func newWorkerStatements(at, held string, words func(string) string) workerStatements {
	return workerStatements{
		heartbeat: words("INSERT INTO queue_workers (id, kind, host, pid, queues, concurrency, version, started_at, heartbeat_at, running, rescue_ms) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, " + at + ", ?, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, running = excluded.running"),
		held:       held,
		forget:     words("DELETE FROM queue_workers WHERE heartbeat_at < " + at + " - " + strconv.Itoa(driver.GoneForgottenMs)),
		deregister: words("DELETE FROM queue_workers WHERE id = ?"),
		list: words("SELECT id, kind, host, pid, queues, concurrency, version, started_at, heartbeat_at, running, rescue_ms, " + at +
			" FROM queue_workers ORDER BY started_at, id"),
		now: words("SELECT " + at),
	}
}

// Heartbeat implements driver.Driver.
func (b *base) Heartbeat(ctx context.Context, w driver.Worker, now int64, running []driver.Attempt) ([]driver.Attempt, error) {
	at, err := b.at(ctx, now)
	if err != nil {
		return nil, err
	}
	if _, err := b.write(ctx, b.w.heartbeat, w.ID, w.Kind, w.Host, w.PID, strings.Join(w.Queues, ","), w.Concurrency, w.Version, w.StartedAt, at, w.Running, w.RescueMs); err != nil {
		return nil, err
	}
	if _, err = b.write(ctx, b.w.forget, at); err != nil || len(running) == 0 {
		return nil, err
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
		return nil, err
	}
	var lost []driver.Attempt
	for _, a := range running {
		if n, ok := held[a.ID]; !ok || n != a.Attempt {
			lost = append(lost, a)
		}
	}
	return lost, nil
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
		var w driver.Worker
		var queues string
		if err := rows.Scan(&w.ID, &w.Kind, &w.Host, &w.PID, &queues, &w.Concurrency, &w.Version, &w.StartedAt, &w.HeartbeatAt, &w.Running, &w.RescueMs, &clock); err != nil {
			return err
		}
		if queues != "" {
			w.Queues = strings.Split(queues, ",")
		}
		out = append(out, w)
		return nil
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
