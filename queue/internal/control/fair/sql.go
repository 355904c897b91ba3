package fair

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// behindRound finds the groups whose next place is at most their queue's
// round: the lowest place waiting (of priority 0), or with none the
// highest given less one (which keeps the row of that one).
const behindRound = " FROM queue_fair f WHERE f.next <= coalesce(" +
	"(SELECT fair_seq FROM jobs WHERE queue = f.queue AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1), " +
	"(SELECT g.next - 1 FROM queue_fair g WHERE g.queue = f.queue ORDER BY g.next DESC LIMIT 1))"

// AnyBehind finds a group behind its queue's round; Prune forgets them,
// and on PostgreSQL PgPrune only the rows no dispatch holds: one that
// gives a group's place (holding its row) may wait for the prune, never
// the prune for it.
const (
	AnyBehind = "SELECT 1" + behindRound + " LIMIT 1"
	Prune     = "DELETE FROM queue_fair WHERE (queue, key) IN (SELECT f.queue, f.key" + behindRound + ")"
	PgPrune   = "DELETE FROM queue_fair WHERE (queue, key) IN (SELECT f.queue, f.key" + behindRound + " FOR UPDATE SKIP LOCKED)"
)

// The statements of Place, in SQLite's words with ROWS for its rows
// (a JSON array of objects: queue q, key k, the queue's round r, the
// group's jobs n).
const (
	// roundOf is the round a queue (its argument, twice) serves: its
	// lowest place waiting, of priority 0, or with none the next after
	// the highest given, or 1.
	roundOf = "SELECT coalesce(" +
		"(SELECT fair_seq FROM jobs WHERE queue = ? AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1), " +
		"(SELECT next FROM queue_fair WHERE queue = ? ORDER BY next DESC LIMIT 1), 1)"
	placeNew    = "INSERT INTO queue_fair (queue, key, next) SELECT q, k, r FROM ROWS WHERE true ORDER BY q, k ON CONFLICT (queue, key) DO NOTHING"
	placeLock   = "SELECT 1 FROM queue_fair WHERE (queue, key) IN (SELECT q, k FROM ROWS) ORDER BY queue, key FOR UPDATE"
	placeUpdate = "UPDATE queue_fair SET next = GREATEST(queue_fair.next, w.r) + w.n FROM ROWS WHERE queue_fair.queue = w.q AND queue_fair.key = w.k " +
		"RETURNING queue_fair.queue, queue_fair.key, queue_fair.next"
	pgPlaceRows     = "jsonb_to_recordset(?::jsonb) AS w(q text, k text, r bigint, n bigint)"
	sqlitePlaceRows = "(SELECT json_extract(value, '$.q') AS q, json_extract(value, '$.k') AS k, json_extract(value, '$.r') AS r, " +
		"json_extract(value, '$.n') AS n FROM jsonb_each(?)) AS w"
)

// groupCount is a group of a batch, as Place's rows hold it.
type groupCount struct {
	Queue string `json:"q"`
	Key   string `json:"k"`
	Round int64  `json:"r"`
	N     int64  `json:"n"`
}

// Place gives the jobs of a batch with a FairKey and no place yet
// their places, in tx, as the trigger jobs_fair would one by one: each
// group's next ones, from its next place or the queue's round, whichever
// is later, in the order of the batch. One update of each group's row
// for the batch, where the trigger would update it once a job: on
// PostgreSQL every update of a row leaves a version the next must step
// over until the transaction ends, so a batch of one group's jobs would
// cost its square. Rows are locked in order of queue and key, so two
// batches never wait for each other; in the transaction that stores the
// jobs, which holds them to its commit (a transaction of its own would
// need a second connection while a unit of work holds one: a full pool
// would wait forever). A batch whose insert then fails leaves its
// groups' places used: their next jobs come a few turns later, nothing
// more.
func Place(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, jobs []*driver.Job) error {
	if !slices.ContainsFunc(jobs, Unplaced) {
		return nil // every dispatch passes here: nothing to allocate
	}
	var groups []groupCount
	at := map[[2]string]int{}
	for _, j := range jobs {
		if !Unplaced(j) {
			continue
		}
		k := [2]string{j.Queue, j.FairKey}
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, groupCount{Queue: j.Queue, Key: j.FairKey})
		}
		groups[i].N++
	}
	if len(groups) == 0 {
		return nil
	}
	rounds := map[string]int64{}
	for i, g := range groups {
		r, ok := rounds[g.Queue]
		if !ok {
			if err := tx.QueryRowContext(ctx, d.Words(roundOf), g.Queue, g.Queue).Scan(&r); err != nil {
				return err
			}
			rounds[g.Queue] = r
		}
		groups[i].Round = r
	}
	list, err := json.Marshal(groups)
	if err != nil {
		return err
	}
	rows, greatest := sqlitePlaceRows, "max("
	if d.PG {
		rows, greatest = pgPlaceRows, "GREATEST("
	}
	words := func(s string) string {
		return d.Rendering("place rows", s, func(s string) string {
			return d.Render(strings.ReplaceAll(strings.ReplaceAll(s, "ROWS", rows), "GREATEST(", greatest))
		})
	}
	if _, err := tx.ExecContext(ctx, words(placeNew), string(list)); err != nil {
		return err
	}
	if d.PG {
		if _, err := tx.ExecContext(ctx, words(placeLock), string(list)); err != nil {
			return err
		}
	}
	next := map[[2]string]int64{}
	r, err := tx.QueryContext(ctx, words(placeUpdate), string(list))
	err = sqlkit.EachRow(r, err, func(r *sql.Rows) error {
		var q, k string
		var n int64
		if err := r.Scan(&q, &k, &n); err != nil {
			return err
		}
		next[[2]string{q, k}] = n - groups[at[[2]string{q, k}]].N // the first place of the batch
		return nil
	})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if !Unplaced(j) {
			continue
		}
		k := [2]string{j.Queue, j.FairKey}
		j.FairSeq = next[k]
		next[k]++
	}
	return nil
}

// Unplaced reports whether j has a fairness key and no place yet.
func Unplaced(j *driver.Job) bool { return j.FairKey != "" && j.FairSeq == 0 }
