package dbdriver

import (
	"context"

	"github.com/navree/navree/queue/internal/driver"
)

// The statements of pauses, in words both databases read: the table is a
// handful of rows.
const (
	sqlitePause   = "INSERT INTO queue_pauses (queue, paused_at) VALUES (?, ?) ON CONFLICT (queue) DO NOTHING"
	resumeOne     = "DELETE FROM queue_pauses WHERE queue = ?"
	resumeAll     = "DELETE FROM queue_pauses"
	listPaused    = "SELECT queue FROM queue_pauses ORDER BY queue"
	notifyPauses  = "SELECT pg_notify('" + Channel + "', '" + driver.AllQueues + "')"
	postgresPause = "WITH paused AS (INSERT INTO queue_pauses (queue, paused_at) VALUES ($1, $2) ON CONFLICT (queue) DO NOTHING) " + notifyPauses
)

// Pause implements driver.Driver.
func (s *sqliteDriver) Pause(ctx context.Context, queue string, now int64) error {
	_, err := s.sqldb.ExecContext(ctx, sqlitePause, queue, now)
	return err
}

// Pause implements driver.Driver. The NOTIFY of the same statement
// reaches every listening worker when it commits: they read the pauses
// again at once.
func (p *postgresDriver) Pause(ctx context.Context, queue string, now int64) error {
	_, err := p.sqldb.ExecContext(ctx, postgresPause, queue, now)
	return err
}

// Resume implements driver.Driver.
func (s *sqliteDriver) Resume(ctx context.Context, queue string) (bool, error) {
	return s.resume(ctx, queue, "")
}

// Resume implements driver.Driver, telling the listening workers as Pause
// does.
func (p *postgresDriver) Resume(ctx context.Context, queue string) (bool, error) {
	return p.resume(ctx, queue, " RETURNING queue) SELECT (SELECT count(*) FROM resumed) FROM ("+notifyPauses+") AS note")
}

// resume deletes the pause of queue; on PostgreSQL, notify ends the
// statement with its NOTIFY.
func (b *base) resume(ctx context.Context, queue, notify string) (bool, error) {
	query, args := resumeOne, []any{queue}
	if queue == driver.AllQueues {
		query, args = resumeAll, nil
	}
	if notify != "" {
		var resumed int
		err := b.sqldb.QueryRowContext(ctx, "WITH resumed AS ("+b.d.Words(query)+notify, args...).Scan(&resumed)
		return resumed > 0, err
	}
	res, err := b.sqldb.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Paused implements driver.Driver.
func (b *base) Paused(ctx context.Context) ([]string, error) {
	return b.ids(ctx, listPaused)
}
