package dbdriver

import (
	"context"
	"database/sql"

	"github.com/navree/navree/queue/internal/control/history"

	"github.com/navree/navree/queue/internal/driver"
)

// AddThroughput implements driver.Driver.
func (s *sqliteDriver) AddThroughput(ctx context.Context, counts []driver.Throughput, timings []driver.Timing, keepFrom int64) error {
	return s.inTx(ctx, nil, func(tx *sql.Tx) error {
		return history.Add(ctx, tx, counts, timings, keepFrom, s.d.Words)
	})
}

// AddThroughput implements driver.Driver.
func (p *postgresDriver) AddThroughput(ctx context.Context, counts []driver.Throughput, timings []driver.Timing, keepFrom int64) error {
	tx, err := p.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := history.Add(ctx, tx, counts, timings, keepFrom, p.d.Words); err != nil {
		return err
	}
	return tx.Commit()
}

// Timings implements driver.Driver.
func (b *base) Timings(ctx context.Context, since int64, queue, name string) ([]driver.Timing, error) {
	var out []driver.Timing
	err := b.read(ctx, b.d.Words(history.ReadTimings), []any{since, queue, queue, name, name}, func(rows *sql.Rows) error {
		var t driver.Timing
		var wait int
		err := rows.Scan(&t.Minute, &t.Queue, &t.Name, &wait, &t.Bucket, &t.Count)
		t.Wait = wait == 1
		out = append(out, t)
		return err
	})
	return out, err
}

// Throughput implements driver.Driver.
func (b *base) Throughput(ctx context.Context, since int64) ([]driver.Throughput, error) {
	rows, err := b.sqldb.QueryContext(ctx, b.d.Words(history.ReadThroughput), since)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Throughput
	for rows.Next() {
		var t driver.Throughput
		if err := rows.Scan(&t.Queue, &t.Minute, &t.Succeeded, &t.Released, &t.Failed); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
