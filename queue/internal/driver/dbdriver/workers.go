package dbdriver

import (
	"context"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// workerStatements are the registry's statements, at being a time on the
// clock of reservations in the database's words.
type workerStatements struct{ heartbeat, forget, deregister, list, now string }

func newWorkerStatements(at string, words func(string) string) workerStatements {
	return workerStatements{
		heartbeat: words("INSERT INTO queue_workers (id, host, pid, queues, concurrency, version, started_at, heartbeat_at, running) " +
			"VALUES (?, ?, ?, ?, ?, ?, ?, " + at + ", ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, running = excluded.running"),
		forget:     words("DELETE FROM queue_workers WHERE heartbeat_at < " + at + " - " + strconv.Itoa(driver.GoneForgottenMs)),
		deregister: words("DELETE FROM queue_workers WHERE id = ?"),
		list: words("SELECT id, host, pid, queues, concurrency, version, started_at, heartbeat_at, running, " + at +
			" FROM queue_workers ORDER BY started_at, id"),
		now: words("SELECT " + at),
	}
}

// Heartbeat implements driver.Driver.
func (b *base) Heartbeat(ctx context.Context, w driver.Worker, now int64) error {
	at, err := b.at(ctx, now)
	if err != nil {
		return err
	}
	if _, err := b.write(ctx, b.w.heartbeat, w.ID, w.Host, w.PID, strings.Join(w.Queues, ","), w.Concurrency, w.Version, w.StartedAt, at, w.Running); err != nil {
		return err
	}
	_, err = b.write(ctx, b.w.forget, at)
	return err
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
	st, err := b.prepared(ctx, b.w.list)
	if err != nil {
		return nil, 0, err
	}
	rows, err := st.QueryContext(ctx, at)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var w driver.Worker
		var queues string
		if err := rows.Scan(&w.ID, &w.Host, &w.PID, &queues, &w.Concurrency, &w.Version, &w.StartedAt, &w.HeartbeatAt, &w.Running, &clock); err != nil {
			return nil, 0, err
		}
		w.Queues = strings.Split(queues, ",")
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
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
