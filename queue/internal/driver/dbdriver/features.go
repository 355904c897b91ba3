package dbdriver

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// The features of a queue's jobs (see driver.Features) are rows of
// queue_features, written by the trigger jobs_features in the
// transaction that stores a job that has one; every search of a
// reservation starts with doesAll.

// featureTests are the tests of a job that has each feature, as the
// trigger jobs_features makes them: the first of each pair finds a
// waiting job by its index, the second a running one (by the index of
// reserved jobs).
var featureTests = []struct {
	feature          driver.Features
	waiting, running string
}{
	{driver.FeaturePriority, "reserved_at IS NULL AND priority <> 0", "priority <> 0"},
	{driver.FeatureRate, "rate_key IS NOT NULL AND reserved_at IS NULL", "rate_key IS NOT NULL"},
	{driver.FeatureFair, "reserved_at IS NULL AND fair_seq IS NOT NULL", "fair_key IS NOT NULL"},
}

// The statements of features, in SQLite's words.
const (
	featuresOf = "SELECT feature FROM queue_features WHERE queue = ?"
	// pgFeaturesLock is the lock of a queue's features that the trigger
	// takes shared; a tidy takes it alone, or leaves the rows as they are.
	pgFeaturesLock = "SELECT pg_try_advisory_xact_lock(hashtextextended('navree_features:' || current_schema() || ':' || $1, 0))"
)

// tidyFeatures deletes the rows of a queue's features that no job of it
// has: its argument is the queue, 1 + 2 × len(featureTests) times.
var tidyFeatures = func() string {
	var b strings.Builder
	b.WriteString("DELETE FROM queue_features WHERE queue = ? AND (")
	for i, t := range featureTests {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("feature = " + strconv.Itoa(int(t.feature)) +
			" AND NOT EXISTS (SELECT 1 FROM jobs WHERE queue = ? AND " + t.waiting + ")" +
			" AND NOT EXISTS (SELECT 1 FROM jobs WHERE reserved_at IS NOT NULL AND queue = ? AND " + t.running + ")")
	}
	b.WriteString(")")
	return b.String()
}()

// Features implements driver.Driver. Its tidy, on PostgreSQL, takes the
// lock of the queue's features alone first, so that it deletes no row a
// transaction storing a job counted on (it holds the lock shared until it
// ends), and its delete reads a snapshot taken after the lock: one that
// sees every such job. When another holds the lock it leaves the rows.
func (b *base) Features(ctx context.Context, queue string, tidy bool) (driver.Features, error) {
	f, err := b.features(ctx, queue)
	if err != nil || f == 0 || !tidy {
		return f, err
	}
	args := make([]any, 1+2*len(featureTests))
	for i := range args {
		args[i] = queue
	}
	if b.dialect().pg {
		err = b.inTx(ctx, nil, func(tx *sql.Tx) error {
			var locked bool
			if err := tx.QueryRowContext(ctx, pgFeaturesLock, queue).Scan(&locked); err != nil || !locked {
				return err
			}
			_, err := tx.ExecContext(ctx, numbered(tidyFeatures), args...)
			return err
		})
	} else {
		_, err = b.write(ctx, tidyFeatures, args...)
	}
	if err != nil {
		return 0, err
	}
	return b.features(ctx, queue)
}

// features reads the features recorded of queue.
func (b *base) features(ctx context.Context, queue string) (driver.Features, error) {
	var f driver.Features
	err := b.read(ctx, b.q.words(featuresOf), []any{queue}, func(rows *sql.Rows) error {
		var one int64
		if err := rows.Scan(&one); err != nil {
			return err
		}
		f |= driver.Features(one)
		return nil
	})
	return f, err
}
