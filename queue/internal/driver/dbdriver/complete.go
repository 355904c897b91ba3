package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/navree/navree/queue/internal/driver"
)

// complete deletes the jobs of done that succeeded, fenced by their
// attempts, with the statement that does (one returning the ids).
func (b *base) complete(ctx context.Context, done []driver.Attempt, stmt string) ([]string, error) {
	batch, err := json.Marshal(done)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(done))
	err = b.query(ctx, stmt, []any{string(batch)}, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Release implements driver.Driver.
func (b *base) Release(ctx context.Context, id string, attempt int, availableAt int64, f driver.Failure) (bool, error) {
	entry, err := json.Marshal(f)
	if err != nil {
		return false, err
	}
	return b.exec(ctx, b.q.release, availableAt, f.Error, string(entry), id, attempt)
}

// Interrupt implements driver.Driver.
func (b *base) Interrupt(ctx context.Context, id string, attempt int, f driver.Failure) (bool, error) {
	f.Interrupted = true
	entry, err := json.Marshal(f)
	if err != nil {
		return false, err
	}
	return b.exec(ctx, b.q.interrupt, f.At, string(entry), id, attempt)
}
