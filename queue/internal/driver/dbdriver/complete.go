package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/navree/navree/queue/internal/driver"
)

// Complete implements driver.Driver.
func (b *base) Complete(ctx context.Context, done []driver.Attempt) ([]string, error) {
	batch, err := json.Marshal(done)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(done))
	err = b.query(ctx, b.q.complete, []any{string(batch)}, func(rows *sql.Rows) error {
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
func (b *base) Release(ctx context.Context, id string, attempt int, availableAt int64, lastError string) (bool, error) {
	return b.exec(ctx, b.q.release, availableAt, lastError, id, attempt)
}
