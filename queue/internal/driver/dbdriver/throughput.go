package dbdriver

import (
	"context"
	"database/sql"

	"github.com/navree/navree/queue/internal/driver"
)

// The statements of throughput, in SQLite's words (numbered for
// PostgreSQL): a handful of rows a minute.
const (
	addThroughput = "INSERT INTO queue_throughput (queue, minute, succeeded, released, failed) VALUES (?, ?, ?, ?, ?) " +
		"ON CONFLICT (queue, minute) DO UPDATE SET succeeded = queue_throughput.succeeded + excluded.succeeded, " +
		"released = queue_throughput.released + excluded.released, failed = queue_throughput.failed + excluded.failed"
	forgetThroughput = "DELETE FROM queue_throughput WHERE minute < ?"
	readThroughput   = "SELECT queue, minute, succeeded, released, failed FROM queue_throughput WHERE minute >= ? ORDER BY queue, minute"
)

// AddThroughput implements driver.Driver.
func (s *sqliteDriver) AddThroughput(ctx context.Context, counts []driver.Throughput, keepFrom int64) error {
	return s.inTx(ctx, nil, func(tx *sql.Tx) error {
		return addThroughputIn(ctx, tx, counts, keepFrom, func(s string) string { return s })
	})
}

// AddThroughput implements driver.Driver.
func (p *postgresDriver) AddThroughput(ctx context.Context, counts []driver.Throughput, keepFrom int64) error {
	tx, err := p.sqldb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := addThroughputIn(ctx, tx, counts, keepFrom, numbered); err != nil {
		return err
	}
	return tx.Commit()
}

func addThroughputIn(ctx context.Context, tx *sql.Tx, counts []driver.Throughput, keepFrom int64, words func(string) string) error {
	for _, c := range counts {
		if _, err := tx.ExecContext(ctx, words(addThroughput), c.Queue, c.Minute, c.Succeeded, c.Released, c.Failed); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, words(forgetThroughput), keepFrom)
	return err
}

// Throughput implements driver.Driver.
func (s *sqliteDriver) Throughput(ctx context.Context, since int64) ([]driver.Throughput, error) {
	return s.throughput(ctx, readThroughput, since)
}

// Throughput implements driver.Driver.
func (p *postgresDriver) Throughput(ctx context.Context, since int64) ([]driver.Throughput, error) {
	return p.throughput(ctx, numbered(readThroughput), since)
}

func (b *base) throughput(ctx context.Context, query string, since int64) ([]driver.Throughput, error) {
	rows, err := b.sqldb.QueryContext(ctx, query, since)
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
