package dbdriver

import (
	"context"
	"database/sql"
)

// The statements of replan, PostgreSQL's: the pages of jobs its
// statistics count and those it has, and the lock that lets one process
// at a time analyze it.
const (
	pgJobsPages  = "SELECT c.relpages, pg_relation_size(c.oid) / current_setting('block_size')::bigint FROM pg_class c WHERE c.oid = 'jobs'::regclass"
	pgReplanLock = "SELECT pg_try_advisory_xact_lock(hashtextextended('navree_replan:' || current_schema(), 0))"
	// pgReplan analyzes the columns that the statements on jobs search,
	// join and sort by, which its plans read the statistics of: the size
	// of the table, which every plan reads, is counted whichever columns
	// are named. The others (the payload, the errors, the settings) are
	// autovacuum's to analyze: naming them cost the analysis of 100,000
	// jobs 56–59 ms where the columns below cost 33.
	pgReplan = "ANALYZE jobs (id, queue, name, attempts, available_at, reserved_at, priority, unique_key, limit_key, rate_key, fair_key, fair_seq)"
)

// grownPages is how far past four times its statistics' pages jobs must
// have grown for replan to analyze it: a megabyte, about 6,000 small
// jobs.
const grownPages = 128

// replan runs driver.UpkeepPlans: on PostgreSQL, when jobs has more than
// four times the pages its statistics say (and than when this process
// last analyzed it, in case the database refused: ANALYZE of a table
// another role owns is skipped with a warning), it analyzes jobs, which
// has every connection plan its statements on jobs again. It looks
// first, reading the catalog only; SQLite keeps no plan across
// statements' executions that a size could mislead.
func (b *base) replan(ctx context.Context) (int, error) {
	if !b.d.PG {
		return 0, nil
	}
	var counted, pages int64
	if err := b.sqldb.QueryRowContext(ctx, pgJobsPages).Scan(&counted, &pages); err != nil {
		return 0, err
	}
	if pages <= 4*max(counted, b.analyzed.Load())+grownPages {
		return 0, nil
	}
	analyzed, tried := 0, false
	err := b.inTx(ctx, nil, func(tx *sql.Tx) error {
		var ours bool
		if err := tx.QueryRowContext(ctx, pgReplanLock).Scan(&ours); err != nil || !ours {
			return err // another process analyzes it
		}
		// Not behind a vacuum for long: the next look tries again.
		if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '1s'"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, pgReplan); err != nil {
			return err
		}
		tried = true
		// A refused ANALYZE (a warning, not an error) left the count as it was.
		var now, size int64
		if err := tx.QueryRowContext(ctx, pgJobsPages).Scan(&now, &size); err != nil {
			return err
		}
		if now != counted {
			analyzed = 1
		}
		return nil
	})
	if err == nil && tried {
		b.analyzed.Store(pages)
	}
	return analyzed, err
}
