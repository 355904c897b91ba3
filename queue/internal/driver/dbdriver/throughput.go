package dbdriver

import (
	"context"
	"database/sql"

	"github.com/navree/navree/queue/internal/driver"
)

// The statements of throughput, in SQLite's words (the driver's dialect
// puts them in PostgreSQL's): a handful of rows a minute.
const (
	addThroughput = "INSERT INTO queue_throughput (queue, minute, succeeded, released, failed) VALUES (?, ?, ?, ?, ?) " +
		"ON CONFLICT (queue, minute) DO UPDATE SET succeeded = queue_throughput.succeeded + excluded.succeeded, " +
		"released = queue_throughput.released + excluded.released, failed = queue_throughput.failed + excluded.failed"
	forgetThroughput = "DELETE FROM queue_throughput WHERE minute < ?"
	readThroughput   = "SELECT queue, minute, succeeded, released, failed FROM queue_throughput WHERE minute >= ? ORDER BY queue, minute"

	addTiming = "INSERT INTO queue_timings (minute, queue, name, wait, bucket, count) VALUES (?, ?, ?, ?, ?, ?) " +
		"ON CONFLICT (minute, queue, name, wait, bucket) DO UPDATE SET count = queue_timings.count + excluded.count"
	forgetTimings = "DELETE FROM queue_timings WHERE minute < ?"
	// readTimings walks the primary key from a minute on; the queue and
	// the type are checked on the rows of the window (? = '' for every one).
	readTimings = "SELECT minute, queue, name, wait, bucket, count FROM queue_timings WHERE minute >= ? " +
		"AND (? = '' OR queue = ?) AND (? = '' OR name = ?) ORDER BY minute"
)

// AddThroughput implements driver.Driver.
func (s *sqliteDriver) AddThroughput(ctx context.Context, counts []driver.Throughput, timings []driver.Timing, keepFrom int64) error {
	return s.inTx(ctx, nil, func(tx *sql.Tx) error {
		return addThroughputIn(ctx, tx, counts, timings, keepFrom, s.d.Words)
	})
}

// AddThroughput implements driver.Driver.
func (p *postgresDriver) AddThroughput(ctx context.Context, counts []driver.Throughput, timings []driver.Timing, keepFrom int64) error {
	tx, err := p.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := addThroughputIn(ctx, tx, counts, timings, keepFrom, p.d.Words); err != nil {
		return err
	}
	return tx.Commit()
}

func addThroughputIn(ctx context.Context, tx *sql.Tx, counts []driver.Throughput, timings []driver.Timing, keepFrom int64, words func(string) string) error {
	for _, c := range counts {
		if _, err := tx.ExecContext(ctx, words(addThroughput), c.Queue, c.Minute, c.Succeeded, c.Released, c.Failed); err != nil {
			return err
		}
	}
	if len(timings) > 0 {
		st, err := tx.PrepareContext(ctx, words(addTiming))
		if err != nil {
			return err
		}
		defer st.Close()
		for _, t := range timings {
			if _, err := st.ExecContext(ctx, t.Minute, t.Queue, t.Name, b2i(t.Wait), t.Bucket, t.Count); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, words(forgetTimings), keepFrom); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, words(forgetThroughput), keepFrom)
	return err
}

// Timings implements driver.Driver.
func (b *base) Timings(ctx context.Context, since int64, queue, name string) ([]driver.Timing, error) {
	var out []driver.Timing
	err := b.read(ctx, b.d.Words(readTimings), []any{since, queue, queue, name, name}, func(rows *sql.Rows) error {
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
	rows, err := b.sqldb.QueryContext(ctx, b.d.Words(readThroughput), since)
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
