package dbdriver

import (
	"context"
	"database/sql"
	"regexp"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// Fairness (see driver.Job.FairKey). The trigger jobs_fair gives each job
// with a key its place (fair_seq) as it enters jobs, from its group's row
// of queue_fair; a Fair reservation searches, in one transaction, the
// jobs of other priorities by priority, those without a key in due
// order and those with one by place (the index jobs_fair), each search
// up to what the ones before left of the limit, and reserves the first
// of them in driver.FairOrder. On
// PostgreSQL the searches lock what they find (SKIP LOCKED) until the
// transaction ends, so no other reservation takes it meanwhile.

// The statements of fairness, in SQLite's words.
const (
	anyFair = "SELECT 1 FROM jobs WHERE queue = ? AND reserved_at IS NULL AND fair_seq IS NOT NULL LIMIT 1"
	// The searches of a Fair reservation; PRIO is where those of a queue
	// with priorities keep to priority 0. Their arguments are queue, now,
	// limit; the second's queue, from, now, limit.
	fairKeyed = "SELECT id, priority, available_at, fair_key, fair_seq FROM jobs INDEXED BY jobs_fair " +
		"WHERE queue = ? AND reserved_at IS NULL AND fair_seq IS NOT NULL PRIO AND available_at <= ? ORDER BY fair_seq, available_at, id LIMIT ?"
	fairPlain = "SELECT id, priority, available_at, '', 0 FROM jobs INDEXED BY jobs_waiting " +
		"WHERE queue = ? AND reserved_at IS NULL AND fair_seq IS NULL PRIO AND available_at >= ? AND available_at <= ? ORDER BY available_at, id LIMIT ?"
	fairPrioritized = "SELECT id, priority, available_at, coalesce(fair_key, ''), coalesce(fair_seq, 0) FROM jobs INDEXED BY jobs_prioritized " +
		"WHERE queue = ? AND reserved_at IS NULL AND priority <> 0 AND available_at <= ? ORDER BY priority DESC, available_at, id LIMIT ?"
	// fairTake reserves the jobs the searches chose (a JSON array of
	// ids) at a time of reservations (AT).
	sqliteFairTake = "UPDATE jobs SET reserved_at = ?, reserved_by = ?, attempts = attempts + 1 " +
		"WHERE id IN (SELECT value FROM json_each(?)) AND reserved_at IS NULL RETURNING " + columns
	pgFairTake = "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) " +
		"UPDATE jobs SET reserved_at = " + pgAt + ", reserved_by = ?, attempts = jobs.attempts + 1 FROM lazy " +
		"WHERE jobs.id = ANY(ARRAY(SELECT x::uuid FROM jsonb_array_elements_text(?::jsonb) AS x)) AND jobs.reserved_at IS NULL RETURNING "
)

// behindRound finds the groups whose next place is at most their queue's
// round: the lowest place waiting (of priority 0), or with none the
// highest given less one (which keeps the row of that one).
const behindRound = " FROM queue_fair f WHERE f.next <= coalesce(" +
	"(SELECT fair_seq FROM jobs WHERE queue = f.queue AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1), " +
	"(SELECT g.next - 1 FROM queue_fair g WHERE g.queue = f.queue ORDER BY g.next DESC LIMIT 1))"

// PruneGroups implements driver.Driver. It looks first, reading only, as
// PruneRates does.
func (b *base) PruneGroups(ctx context.Context) error {
	if found, err := b.exists(ctx, "SELECT 1"+behindRound+" LIMIT 1"); err != nil || !found {
		return err
	}
	lock := ""
	if b.dialect().pg {
		// Only the rows no dispatch holds: one that gives a group's place
		// (holding its row) may wait for the prune, never the prune for it.
		lock = " FOR UPDATE SKIP LOCKED"
	}
	query := "DELETE FROM queue_fair WHERE (queue, key) IN (SELECT f.queue, f.key" + behindRound + lock + ")"
	_, err := b.write(ctx, query)
	return err
}

// Fair implements driver.Driver.
func (b *base) Fair(ctx context.Context, queue string) (bool, error) {
	return b.exists(ctx, b.q.words(anyFair), queue)
}

// fairSearch is one search of a Fair reservation: its statement in
// SQLite's words and its arguments.
type fairSearch struct {
	query string
	args  []any
}

// reserveFair reserves, in tx, the jobs of the Fair reservation r at at
// (on PostgreSQL nil for the server's clock), in driver.FairOrder; with
// rated its searches leave out the keys whose window is full at at.
func (b *base) reserveFair(ctx context.Context, tx *sql.Tx, at any, r driver.Reservation, rated bool) ([]*driver.Job, error) {
	d := b.dialect()
	prio := ""
	if r.Prioritized {
		prio = " AND priority = 0"
	}
	// The searches, in the order of what they find: the jobs of
	// priorities above 0 (and below), then those of 0 without a key, then
	// those with one, each up to what the ones before left of the limit.
	var searches []fairSearch
	if r.Prioritized {
		searches = append(searches, fairSearch{fairPrioritized, []any{r.Queue, r.Now, r.Limit}})
	}
	searches = append(searches,
		fairSearch{strings.Replace(fairPlain, "PRIO", prio, 1), []any{r.Queue, r.From, r.Now, r.Limit}},
		fairSearch{strings.Replace(fairKeyed, "PRIO", prio, 1), []any{r.Queue, r.Now, r.Limit}})
	var found []*driver.Job
	for i, s := range searches {
		left := r.Limit - len(found) + below(found)
		if left <= 0 {
			break
		}
		query, args := s.query, s.args
		args[len(args)-1] = left
		if rated {
			var slots []int
			query, slots = ratedIn(query, d.clockAt())
			args = withTimes(args, slots, at)
		}
		if d.pg { // PostgreSQL chooses its index itself
			query = unindexed(query) + " FOR UPDATE SKIP LOCKED"
		}
		rows, err := tx.QueryContext(ctx, d.words(query), args...)
		err = eachRow(rows, err, func(rows *sql.Rows) error {
			j := &driver.Job{}
			if err := rows.Scan(&j.ID, &j.Priority, &j.AvailableAt, &j.FairKey, &j.FairSeq); err != nil {
				return err
			}
			found = append(found, j)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if r.Drained != nil && i == len(searches)-2 { // the search of the jobs without a key
			*r.Drained = len(found) < r.Limit-below(found)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	driver.FairOrder(found)
	ids := make([]string, 0, min(len(found), r.Limit))
	for _, j := range found[:min(len(found), r.Limit)] {
		ids = append(ids, j.ID)
	}
	take, args := sqliteFairTake, []any{at, nullable(r.By), listOf(ids)}
	if d.pg {
		take = numbered(pgFairTake + prefixed("jobs.", columns))
	}
	var jobs []*driver.Job
	rows, err := tx.QueryContext(ctx, take, args...)
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		if err == nil {
			j.ReservedBy = r.By
			jobs = append(jobs, j)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	driver.FairOrder(jobs)
	return jobs, nil
}

// indexedBy is SQLite's clause that names a search's index.
var indexedBy = regexp.MustCompile(` INDEXED BY \w+`)

// unindexed is query without the clauses that name its index.
func unindexed(query string) string { return indexedBy.ReplaceAllString(query, "") }

// below counts the jobs of priorities below 0 among found: they come
// after the others.
func below(found []*driver.Job) int {
	n := 0
	for _, j := range found {
		if j.Priority < 0 {
			n++
		}
	}
	return n
}
