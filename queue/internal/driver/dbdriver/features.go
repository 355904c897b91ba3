package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/control"
	"github.com/navree/navree/queue/internal/driver"
)

// The features of a queue's jobs (see driver.Features) are rows of
// queue_features, written in the transaction that stores a job that has
// one: on PostgreSQL by the trigger jobs_features; on SQLite, where a
// trigger on jobs runs a program for every row stored (a bulk dispatch
// was a tenth slower for it), by the dispatch itself (record) and by
// moveIn, every move of jobs into jobs from another table. Which
// features there are, and how each tests a job, is control.All. Every
// search of a reservation is gated by the test of package plan
// (features).

// hasFeatures reports whether j has a feature (control.All).
func hasFeatures(j *driver.Job) bool { return control.Of(j) != 0 }

// record writes, on SQLite, the features of jobs just stored in tx, in
// its transaction; on PostgreSQL the trigger does. (A job that a retried
// insert found stored already records them again: nothing changes.)
func (b *base) record(ctx context.Context, tx *sql.Tx, jobs []*driver.Job) error {
	if b.dialect().PG || !slices.ContainsFunc(jobs, hasFeatures) {
		return nil // every dispatch passes here: nothing to record
	}
	seen := map[string]driver.Features{}
	var rows [][2]any
	for _, j := range jobs {
		f := control.Of(j)
		for _, c := range control.All {
			if f&c.Feature != 0 && seen[j.Queue]&c.Feature == 0 {
				seen[j.Queue] |= c.Feature
				rows = append(rows, [2]any{j.Queue, c.Feature})
			}
		}
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, sqliteRecord, string(list))
	return err
}

// The statements of features, in SQLite's words.
const (
	readFeatures = "SELECT feature FROM queue_features WHERE queue = ?"
	// sqliteRecord writes the rows of a JSON array of [queue, feature].
	sqliteRecord = "INSERT OR IGNORE INTO queue_features (queue, feature) " +
		"SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM jsonb_each(?) WHERE true"
	// pgFeaturesLock is the lock of a queue's features that the trigger
	// takes shared; a tidy takes it alone, or leaves the rows as they are.
	pgFeaturesLock = "SELECT pg_try_advisory_xact_lock(hashtextextended('navree_features:' || current_schema() || ':' || $1, 0))"
)

// tidyFeatures deletes the rows of a queue's features that no job of it
// has: its argument is the queue, 1 + 2 × len(control.All) times.
var tidyFeatures = func() string {
	var b strings.Builder
	b.WriteString("DELETE FROM queue_features WHERE queue = ? AND (")
	for i, c := range control.All {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("feature = " + strconv.Itoa(int(c.Feature)) +
			" AND NOT EXISTS (SELECT 1 FROM jobs WHERE queue = ? AND " + c.Waiting + ")" +
			" AND NOT EXISTS (SELECT 1 FROM jobs WHERE reserved_at IS NOT NULL AND queue = ? AND " + c.Running + ")")
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
	args := make([]any, 1+2*len(control.All))
	for i := range args {
		args[i] = queue
	}
	if b.dialect().PG {
		err = b.inTx(ctx, nil, func(tx *sql.Tx) error {
			var locked bool
			if err := tx.QueryRowContext(ctx, pgFeaturesLock, queue).Scan(&locked); err != nil || !locked {
				return err
			}
			_, err := tx.ExecContext(ctx, b.d.Words(tidyFeatures), args...)
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
	err := b.read(ctx, b.d.Words(readFeatures), []any{queue}, func(rows *sql.Rows) error {
		var one int64
		if err := rows.Scan(&one); err != nil {
			return err
		}
		f |= driver.Features(one)
		return nil
	})
	return f, err
}
