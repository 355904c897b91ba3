package dbdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/navree/navree/queue/internal/driver"
)

// Fairness (see driver.Job.FairKey). The trigger jobs_fair gives each job
// with a key its place (fair_seq) as it enters jobs, from its group's row
// of queue_fair (a batch takes its places in one update a group:
// placeAll); a Fair reservation is one statement of up to four searches,
// each of up to what the ones before left of the limit: the jobs of
// priorities above 0, those of 0 without a key in due order (from the
// cursor), those with one by place (the index jobs_fair), then those of
// priorities below 0. On PostgreSQL each locks what it takes (SKIP
// LOCKED), as the searches of other queues do.

// The statements of fairness, in SQLite's words.
const (
	// The searches of a Fair reservation; PRIO is where those of a queue
	// with priorities keep to priority 0. fairPlain's arguments are
	// queue, from, now, limit; fairKeyed's queue, the first place, now,
	// limit.
	fairPlain = "SELECT id, priority, fair_seq, available_at FROM jobs INDEXED BY jobs_waiting " +
		"WHERE " + doesAll + " AND queue = ? AND reserved_at IS NULL AND fair_seq IS NULL PRIO AND available_at >= ? AND available_at <= ? ORDER BY available_at, id LIMIT ?"
	fairKeyed = "SELECT id, priority, fair_seq, available_at FROM jobs INDEXED BY jobs_fair " +
		"WHERE " + doesAll + " AND queue = ? AND reserved_at IS NULL AND fair_seq IS NOT NULL AND fair_seq >= ? PRIO AND available_at <= ? ORDER BY fair_seq, available_at, id LIMIT ?"
	// placeBehind finds a job with a key due by now (the third argument)
	// with a place before a worker's cursor (the second).
	placeBehind = "SELECT 1 FROM jobs WHERE queue = ? AND reserved_at IS NULL AND fair_seq IS NOT NULL AND fair_seq < ? AND available_at <= ? LIMIT 1"
	// fairOrder is driver.FairOrder in SQL.
	fairOrder = "priority DESC, CASE WHEN priority = 0 THEN coalesce(fair_seq, 0) ELSE 0 END, available_at, id"
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

// fairStatement is the statement of a Fair reservation of one shape, in
// the database's words, and where a rated one takes its times.
type fairStatement struct {
	query string
	slots []int
}

// fairShape is a shape of a Fair reservation: whether it orders by
// priority, whether it leaves out full rate windows, and on PostgreSQL
// its size (see reserveSizes; 0 on SQLite, whose limit is a parameter).
type fairShape struct {
	withPriorities, rated bool
	size                  int
}

// fairQuery is the statement of a Fair reservation of a shape, rendered
// when the driver was made.
func (b *base) fairQuery(shape fairShape) fairStatement { return b.fairs[shape] }

// fairStatements renders every shape of a Fair reservation in d's words:
// by priority or not, rated or not, and on PostgreSQL in each size of
// reserveSizes.
func fairStatements(d dialect) map[fairShape]fairStatement {
	sizes := []int{0}
	if d.pg {
		sizes = reserveSizes
	}
	out := map[fairShape]fairStatement{}
	for _, prio := range []bool{false, true} {
		for _, rated := range []bool{false, true} {
			for _, size := range sizes {
				shape := fairShape{prio, rated, size}
				out[shape] = renderFair(d, shape)
			}
		}
	}
	return out
}

// renderFair is the statement of a Fair reservation of shape in d's
// words.
func renderFair(d dialect, shape fairShape) fairStatement {
	withPriorities, rated := shape.withPriorities, shape.rated
	prio := ""
	if withPriorities {
		prio = " AND priority = 0"
	}
	plain, keyed := strings.Replace(fairPlain, "PRIO", prio, 1), strings.Replace(fairKeyed, "PRIO", prio, 1)
	byPriority := strings.Replace(strings.Replace(prioritized, "FROM jobs", "FROM jobs INDEXED BY jobs_prioritized", 1),
		"SELECT id, priority, available_at", "SELECT id, priority, fair_seq, available_at", 1)
	var query string
	if d.pg {
		// The searches in turn, each of what the ones before left.
		var ctes []string
		taken, limit := "", strconv.Itoa(shape.size)
		search := func(name, q string) {
			if taken == "" {
				q = strings.Replace(q, "LIMIT ?", "LIMIT "+limit, 1)
			} else {
				q = strings.Replace(q, "LIMIT ?", "LIMIT ("+limit+" - ("+taken+"))", 1)
				taken += " + "
			}
			ctes = append(ctes, name+" AS ("+unindexed(q)+" FOR UPDATE SKIP LOCKED)")
			taken += "(SELECT count(*) FROM " + name + ")"
		}
		ids := "SELECT id FROM u UNION ALL SELECT id FROM f"
		if withPriorities {
			search("p", strings.Replace(byPriority, "priority <> 0", "priority > 0", 1))
			ids = "SELECT id FROM p UNION ALL " + ids + " UNION ALL SELECT id FROM n"
		}
		search("u", plain)
		search("f", keyed)
		if withPriorities {
			search("n", strings.Replace(byPriority, "priority <> 0", "priority < 0", 1))
		}
		query = "WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)), " + strings.Join(ctes, ", ") +
			" UPDATE jobs SET reserved_at = " + pgAt + ", reserved_by = ?, attempts = jobs.attempts + 1 FROM lazy " +
			"WHERE jobs.id = ANY(ARRAY(" + ids + ")) RETURNING " + prefixed("jobs.", columns)
	} else {
		// The searches each of up to the limit, the first of them
		// together.
		parts := []string{"SELECT * FROM (" + plain + ")", "SELECT * FROM (" + keyed + ")"}
		if withPriorities {
			parts = append(parts, "SELECT * FROM ("+byPriority+")")
		}
		query = "UPDATE jobs SET reserved_at = ?, reserved_by = ?, attempts = attempts + 1 WHERE id IN (" +
			"SELECT id FROM (" + strings.Join(parts, " UNION ALL ") + ") ORDER BY " + fairOrder + " LIMIT ?) RETURNING " + columns
	}
	var st fairStatement
	if rated {
		query, st.slots = ratedIn(query, d.clockAt())
	}
	st.query = d.words(query)
	return st
}

// fairReserve is the statement of the Fair reservation r at at (on
// PostgreSQL nil for the server's clock), of size (0 on SQLite), and its
// arguments; with rated its searches leave out the keys whose window is
// full at at.
func (b *base) fairReserve(at any, r driver.Reservation, rated bool, size int) (string, []any) {
	st := b.fairQuery(fairShape{r.Prioritized, rated, size})
	does := r.Does()
	if rated {
		does |= driver.FeatureRate
	}
	plain := []any{r.Queue, does, r.Queue, r.From, r.Now}
	keyed := []any{r.Queue, does, r.Queue, max(r.PlaceFrom, 1), r.Now}
	byPriority := []any{r.Queue, does, r.Queue, r.Now}
	if size == 0 { // the limit a parameter of each search
		plain, keyed, byPriority = append(plain, r.Limit), append(keyed, r.Limit), append(byPriority, r.Limit)
	}
	var args []any
	if b.dialect().pg { // in the order of the searches, then the update's
		if r.Prioritized {
			args = append(args, byPriority...)
		}
		args = append(append(args, plain...), keyed...)
		if r.Prioritized {
			args = append(args, byPriority...)
		}
		args = append(args, at, nullable(r.By))
	} else { // the update's, then the searches', then the limit
		args = append(append([]any{at, nullable(r.By)}, plain...), keyed...)
		if r.Prioritized {
			args = append(args, byPriority...)
		}
		args = append(args, r.Limit)
	}
	if rated {
		args = withTimes(args, st.slots, at)
	}
	return st.query, args
}

// reserveFair reserves, in tx (or in a statement of its own for nil),
// the jobs of the Fair reservation r at at, in driver.FairOrder, and
// reports in r.Drained whether it took every due job of priority 0
// without a key: those come first, so it did if it took fewer of them
// (and of priorities above 0) than the limit.
func (b *base) reserveFair(ctx context.Context, tx *sql.Tx, at any, r driver.Reservation, rated bool) ([]*driver.Job, error) {
	var jobs []*driver.Job
	row := func(rows *sql.Rows) error {
		j, err := scanJob(rows)
		if err == nil {
			j.ReservedBy = r.By
			jobs = append(jobs, j)
		}
		return err
	}
	search := func(size int) error {
		query, args := b.fairReserve(at, r, rated, size)
		query = b.only(query, r.Only)
		if tx != nil {
			rows, err := tx.QueryContext(ctx, query, args...)
			return eachRow(rows, err, row)
		}
		return b.query(ctx, query, args, row)
	}
	if !b.dialect().pg {
		if err := search(0); err != nil {
			return nil, err
		}
	}
	// PostgreSQL's sized as reserveSized's, in turn (in tx, or each in a
	// transaction of its own) until the limit is reached or one takes
	// fewer than its size; one that fails reserved nothing.
	for left := r.Limit; b.dialect().pg && left > 0; {
		size, before := sizedReservation(left), len(jobs)
		if err := search(size); err != nil {
			if tx != nil || before == 0 {
				return nil, err
			}
			jobs = jobs[:before]
			driver.FairOrder(jobs)
			return jobs, err
		}
		if len(jobs)-before < size {
			break
		}
		left -= size
	}
	driver.FairOrder(jobs)
	if r.Drained != nil {
		*r.Drained = driver.Drained(jobs, r.Limit)
	}
	return jobs, nil
}

// indexedBy is SQLite's clause that names a search's index.
var indexedBy = regexp.MustCompile(` INDEXED BY \w+`)

// unindexed is query without the clauses that name its index.
func unindexed(query string) string { return indexedBy.ReplaceAllString(query, "") }

// The statements of placeAll, in SQLite's words with ROWS for its rows
// (a JSON array of objects: queue q, key k, the queue's round r, the
// group's jobs n).
const (
	// roundOf is the round a queue (its argument, twice) serves: its
	// lowest place waiting, of priority 0, or with none the next after
	// the highest given, or 1.
	roundOf = "SELECT coalesce(" +
		"(SELECT fair_seq FROM jobs WHERE queue = ? AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1), " +
		"(SELECT next FROM queue_fair WHERE queue = ? ORDER BY next DESC LIMIT 1), 1)"
	placeNew    = "INSERT INTO queue_fair (queue, key, next) SELECT q, k, r FROM ROWS ORDER BY q, k ON CONFLICT (queue, key) DO NOTHING"
	placeLock   = "SELECT 1 FROM queue_fair WHERE (queue, key) IN (SELECT q, k FROM ROWS) ORDER BY queue, key FOR UPDATE"
	placeUpdate = "UPDATE queue_fair SET next = GREATEST(queue_fair.next, w.r) + w.n FROM ROWS WHERE queue_fair.queue = w.q AND queue_fair.key = w.k " +
		"RETURNING queue_fair.queue, queue_fair.key, queue_fair.next"
	pgPlaceRows     = "jsonb_to_recordset(?::jsonb) AS w(q text, k text, r bigint, n bigint)"
	sqlitePlaceRows = "(SELECT json_extract(value, '$.q') AS q, json_extract(value, '$.k') AS k, json_extract(value, '$.r') AS r, " +
		"json_extract(value, '$.n') AS n FROM json_each(?)) AS w"
)

// groupCount is a group of a batch, as placeAll's rows hold it.
type groupCount struct {
	Queue string `json:"q"`
	Key   string `json:"k"`
	Round int64  `json:"r"`
	N     int64  `json:"n"`
}

// placeAll gives the jobs of a batch with a FairKey and no place yet
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
func (b *base) placeAll(ctx context.Context, tx *sql.Tx, jobs []*driver.Job) error {
	if !slices.ContainsFunc(jobs, unplaced) {
		return nil // every dispatch passes here: nothing to allocate
	}
	var groups []groupCount
	at := map[[2]string]int{}
	for _, j := range jobs {
		if !unplaced(j) {
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
	d := b.dialect()
	rounds := map[string]int64{}
	for i, g := range groups {
		r, ok := rounds[g.Queue]
		if !ok {
			if err := tx.QueryRowContext(ctx, d.words(roundOf), g.Queue, g.Queue).Scan(&r); err != nil {
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
	if d.pg {
		rows, greatest = pgPlaceRows, "GREATEST("
	}
	words := func(s string) string {
		return d.words(strings.ReplaceAll(strings.ReplaceAll(s, "ROWS", rows), "GREATEST(", greatest))
	}
	if _, err := tx.ExecContext(ctx, words(strings.Replace(placeNew, "ROWS", "ROWS WHERE true", 1)), string(list)); err != nil {
		return err
	}
	if d.pg {
		if _, err := tx.ExecContext(ctx, words(placeLock), string(list)); err != nil {
			return err
		}
	}
	next := map[[2]string]int64{}
	r, err := tx.QueryContext(ctx, words(placeUpdate), string(list))
	err = eachRow(r, err, func(r *sql.Rows) error {
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
		if !unplaced(j) {
			continue
		}
		k := [2]string{j.Queue, j.FairKey}
		j.FairSeq = next[k]
		next[k]++
	}
	return nil
}

// unplaced reports whether j has a fairness key and no place yet.
func unplaced(j *driver.Job) bool { return j.FairKey != "" && j.FairSeq == 0 }
