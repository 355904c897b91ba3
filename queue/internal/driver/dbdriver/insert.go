package dbdriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/limit"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// appendRow appends the values of insert's placeholders for j: of
// values, or with keyedRow of keyedValues (a keyed job's, or any job's in
// a batch with keyed ones).
func appendRow(args []any, j *driver.Job, keyedRow bool) []any {
	args = append(args, j.ID, j.Queue, j.Name, string(j.Payload), j.MaxAttempts, j.Backoff.String(), j.TimeoutMs,
		nullString(j.UniqueKey), nullInt(j.UniqueUntil), j.AvailableAt, j.CreatedAt, nullBytes(j.Meta), nullString(j.Flow), j.Priority)
	if keyedRow {
		args = append(args, nullString(j.LimitKey), nullString(j.RateKey), nullString(j.FairKey), nullInt(j.FairSeq), driver.ControlsOf(j.LimitMax, j.Rate).Stored())
	}
	return args
}

// keyed reports whether j has a concurrency or a rate limit, or a
// fairness key: its insert
// binds their columns, where the others' writes NULL (five arguments
// fewer to bind a row: a bulk dispatch on SQLite is a fifth faster for
// it).
func keyed(j *driver.Job) bool { return j.LimitKey != "" || j.RateKey != "" || j.FairKey != "" }

// insertAlone stores j with the prepared single insert, outside a
// transaction (for a group of one: the caller holds its turn).
func (b *base) insertAlone(ctx context.Context, j *driver.Job) error {
	st, err := b.prepared(ctx, b.q.insertOf(j))
	if err == nil {
		_, err = st.ExecContext(ctx, appendRow(nil, j, keyed(j))...)
	}
	return err
}

// insertOf is the single insert of j.
func (q *statements) insertOf(j *driver.Job) string {
	if keyed(j) {
		return q.insertKeyed
	}
	return q.insert
}

// insertUniqueOf is the insert of j, unique.
func (q *statements) insertUniqueOf(j *driver.Job) string {
	if keyed(j) {
		return q.insertUniqueKeyed
	}
	return q.insertUnique
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// Insert implements driver.Driver.
func (b *base) Insert(ctx context.Context, uow *db.UnitOfWork, job *driver.Job) (string, bool, error) {
	now := job.CreatedAt
	tx, err := b.tx(ctx, uow)
	switch {
	case err != nil:
		return "", false, err
	case tx != nil: // in the caller's unit of work
		return b.insertOne(ctx, tx, uow, job, now, false)
	}
	id, inserted := job.ID, true
	if job.UniqueKey == "" && job.LimitKey == "" { // one statement: its own transaction is enough
		err = b.alone(ctx, job)
	} else {
		err = b.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
			id, inserted, err = b.insertOne(ctx, tx, nil, job, now, false)
			return err
		})
	}
	if b.again != nil && db.ConnectionLost(err) && !b.joined(ctx) {
		var ids []string
		if ids, err = b.again(ctx, []*driver.Job{job}, now, err); err == nil {
			id, inserted = ids[0], ids[0] == job.ID
		}
	}
	if err != nil {
		return "", false, err
	}
	return id, inserted, nil
}

// joined reports whether a transaction of the driver's own would join
// the unit of work on ctx (db.Transaction joins one of its database),
// whose commit is not the driver's to try again.
func (b *base) joined(ctx context.Context) bool {
	u := db.UnitOfWorkFrom(ctx)
	return u != nil && u.DB() == b.db
}

// insertOne stores job in tx: the transaction of uow, the caller's unit
// of work, or one of the driver's own (uow nil).
func (b *base) insertOne(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job, now int64, again bool) (string, bool, error) {
	switch {
	case job.LimitKey != "":
		if again {
			if stored, err := b.storedAlready(ctx, tx, []*driver.Job{job}); err != nil || stored[job.ID] {
				return job.ID, err == nil, err
			}
		}
		if err := limit.Lock(ctx, tx, b.dialect(), limit.Keys([]*driver.Job{job})); err != nil {
			return "", false, err
		}
		if job.UniqueKey != "" {
			return b.insertLimitedUnique(ctx, tx, uow, job, now)
		}
		return job.ID, true, b.insertLimited(ctx, tx, uow, job)
	case job.UniqueKey != "":
		return b.insertUnique(ctx, tx, uow, job, now)
	}
	if err := b.placeAll(ctx, tx, []*driver.Job{job}); err != nil {
		return "", false, err
	}
	query := b.q.insertOf(job)
	if again {
		query += onConflictID
	}
	if _, err := b.execIn(ctx, tx, uow, []*driver.Job{job}, query, appendRow(nil, job, keyed(job))...); err != nil {
		return "", false, err
	}
	return job.ID, true, b.record(ctx, tx, []*driver.Job{job})
}

// onConflictID makes an insert of jobs skip those stored already.
const onConflictID = " ON CONFLICT (id) DO NOTHING"

// execIn runs a statement that stores jobs in tx, the transaction of uow
// (nil: of the driver's own), and returns how many it stored. On
// PostgreSQL the first in the caller's unit of work that stores a job
// also tells the unit which transaction it is, in the rows it returns,
// so that its commit can be resolved if the connection is lost
// (db.UnitOfWork.Track): with, as proof of the commit, the first job, if
// the statement stored them all. (A transaction of the driver's own
// needs none: storeAgain resolves it.)
func (b *base) execIn(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, jobs []*driver.Job, query string, args ...any) (int64, error) {
	if b.track && uow != nil && !uow.Tracked() {
		rows, err := tx.QueryContext(ctx, query+" RETURNING "+db.TxColumns, args...)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		var n int64
		var t db.Tracking
		for ; rows.Next(); n++ {
			if n == 0 {
				if err := rows.Scan(&t.Xact, &t.ServerStart); err != nil {
					return 0, err
				}
			}
		}
		if err := rows.Err(); err != nil {
			return 0, err
		}
		if n > 0 { // none stored (a unique key held): a later dispatch may track the unit
			if n == int64(len(jobs)) {
				t.Proof, t.Args = proof, []any{jobs[0].ID}
			}
			uow.Track(t)
		}
		return n, nil
	}
	var res sql.Result
	var err error
	if query == b.q.insertFull {
		// A full chunk's insert takes long to parse (500 rows of 19
		// values): it is prepared once and kept.
		var st stmt
		if st, err = b.prepared(ctx, query); err == nil {
			res, err = st.in(ctx, tx).ExecContext(ctx, args...)
		}
	} else {
		res, err = tx.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// proof finds a job stored: waiting, failed or held.
const proof = "SELECT 1 FROM jobs WHERE id = $1 UNION ALL SELECT 1 FROM failed_jobs WHERE id = $1 UNION ALL SELECT 1 FROM queue_held WHERE id = $1"

// insertUnique stores a job with a unique key in tx, unless a pending job
// holds the key: it returns that job's id then. Three statements in one
// transaction, so that no other dispatch slips between them.
func (b *base) insertUnique(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job, now int64) (string, bool, error) {
	if err := b.placeAll(ctx, tx, []*driver.Job{job}); err != nil { // a place left unused if it is not stored: a gap, nothing more
		return "", false, err
	}
	if job.DebounceMaxMs > 0 {
		return b.insertDebounced(ctx, tx, uow, job)
	}
	// A pending job past its window no longer holds the key.
	if _, err := tx.ExecContext(ctx, b.q.expireUnique, job.UniqueKey, now); err != nil {
		return "", false, err
	}
	if n, err := b.execIn(ctx, tx, uow, []*driver.Job{job}, b.q.insertUniqueOf(job), appendRow(nil, job, keyed(job))...); err != nil || n == 1 {
		if err == nil {
			err = b.record(ctx, tx, []*driver.Job{job})
		}
		return job.ID, err == nil, err
	}
	var id string
	if err := tx.QueryRowContext(ctx, b.q.findUnique, job.UniqueKey).Scan(&id); err != nil {
		return "", false, fmt.Errorf("find the pending job with unique key %q: %w", job.UniqueKey, err)
	}
	return id, false, nil
}

// insertDebounced stores a debounced job in tx, or has the waiting job
// holding its key take its payload, meta and due time (see
// driver.Driver.Insert): one statement in a burst, where the job waits.
// Where none waits, a reserved holder gives the key up and the job is
// stored. When another transaction stores a holder between the update
// and the insert (PostgreSQL), the insert does nothing and the update is
// tried again.
func (b *base) insertDebounced(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, job *driver.Job) (string, bool, error) {
	for range 3 {
		var id string
		err := tx.QueryRowContext(ctx, b.q.debounce, string(job.Payload), nullBytes(job.Meta),
			job.AvailableAt, job.DebounceMaxMs, job.AvailableAt, job.DebounceMaxMs, job.UniqueKey).Scan(&id)
		switch {
		case err == nil:
			return id, false, nil
		case !errors.Is(err, sql.ErrNoRows):
			return "", false, err
		}
		if _, err := tx.ExecContext(ctx, b.q.releaseKey, job.UniqueKey); err != nil {
			return "", false, err
		}
		if n, err := b.execIn(ctx, tx, uow, []*driver.Job{job}, b.q.insertUniqueOf(job), appendRow(nil, job, keyed(job))...); err != nil || n == 1 {
			if err == nil {
				err = b.record(ctx, tx, []*driver.Job{job})
			}
			return job.ID, err == nil, err
		}
	}
	return "", false, fmt.Errorf("debounce a job by key %q: other dispatches kept taking the key; try again", job.UniqueKey)
}

// InsertMany implements driver.Driver: jobs without a unique key in
// multi-row inserts (outside a unit of work, as the driver stores a batch
// fastest: COPY on PostgreSQL), unique ones each with its check, all or
// none.
func (b *base) InsertMany(ctx context.Context, uow *db.UnitOfWork, jobs []*driver.Job, now int64) ([]string, error) {
	tx, err := b.tx(ctx, uow)
	switch {
	case err != nil:
		return nil, err
	case tx != nil: // in the caller's unit of work
		return b.insertAll(ctx, tx, uow, jobs, now, false)
	}
	var ids []string
	if slices.ContainsFunc(jobs, func(j *driver.Job) bool { return j.UniqueKey != "" || j.LimitKey != "" }) {
		err = b.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
			ids, err = b.insertAll(ctx, tx, nil, jobs, now, false)
			return err
		})
	} else if len(jobs) > 0 {
		ids = make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		if slices.ContainsFunc(jobs, fair.Unplaced) {
			err = b.inTx(ctx, nil, func(tx *sql.Tx) error { return b.placeAll(ctx, tx, jobs) })
		}
		if err == nil {
			err = b.bulk(ctx, jobs)
		}
	}
	if b.again != nil && db.ConnectionLost(err) && !b.joined(ctx) {
		ids, err = b.again(ctx, jobs, now, err)
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// insertAll stores jobs in tx, the transaction of uow (nil: of the
// driver's own): unique ones each
// with its check, the others in multi-row inserts. Again, it stores them
// after a try whose outcome is unknown: it skips the jobs that try
// stored, be they waiting or failed since, and waits for that try's
// transaction if the server is still at it (an insert of a job whose id
// or unique key an uncommitted row holds waits for that row's
// transaction).
func (b *base) insertAll(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, jobs []*driver.Job, now int64, again bool) ([]string, error) {
	var stored map[string]bool
	if again {
		var err error
		if stored, err = b.storedAlready(ctx, tx, jobs); err != nil {
			return nil, err
		}
	}
	if err := limit.Lock(ctx, tx, b.dialect(), limit.Keys(jobs)); err != nil {
		return nil, err
	}
	ids := make([]string, len(jobs))
	var plain, limited []*driver.Job
	for i, j := range jobs {
		ids[i] = j.ID
		switch {
		case stored[j.ID]:
		case j.LimitKey != "" && j.UniqueKey != "":
			id, _, err := b.insertLimitedUnique(ctx, tx, uow, j, now)
			if err != nil {
				return nil, err
			}
			ids[i] = id
		case j.LimitKey != "":
			limited = append(limited, j)
		case j.UniqueKey != "":
			id, _, err := b.insertUnique(ctx, tx, uow, j, now)
			if err != nil {
				return nil, err
			}
			ids[i] = id
		default:
			plain = append(plain, j)
		}
	}
	if err := b.placeAll(ctx, tx, plain); err != nil {
		return nil, err
	}
	if err := b.insertChunks(ctx, tx, uow, plain, again); err != nil {
		return nil, err
	}
	var err error
	switch len(limited) {
	case 0:
	case 1:
		err = b.insertLimited(ctx, tx, uow, limited[0])
	default:
		err = b.holdAll(ctx, tx, uow, limited)
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// storedIn finds which of a list of ids are stored, waiting, held or
// failed.
const storedIn = "SELECT id FROM jobs WHERE id IN LIST UNION ALL SELECT id FROM failed_jobs WHERE id IN LIST UNION ALL SELECT id FROM queue_held WHERE id IN LIST"

// storedAlready returns which of jobs are in jobs, failed_jobs or queue_held.
func (b *base) storedAlready(ctx context.Context, tx *sql.Tx, jobs []*driver.Job) (map[string]bool, error) {
	stored := map[string]bool{}
	for chunk := range slices.Chunk(jobs, rowsPerInsert) {
		ids := make([]string, len(chunk))
		for i, j := range chunk {
			ids[i] = j.ID
		}
		list := sqlkit.List(ids)
		rows, err := tx.QueryContext(ctx, b.d.Q(storedIn), list, list, list)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			stored[id] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// insertChunks stores jobs in multi-row inserts on tx, the transaction of
// uow; again, skipping those stored already.
func (b *base) insertChunks(ctx context.Context, tx *sql.Tx, uow *db.UnitOfWork, jobs []*driver.Job, again bool) error {
	args := make([]any, 0, 19*min(len(jobs), rowsPerInsert))
	for chunk := range slices.Chunk(jobs, rowsPerInsert) {
		args = args[:0]
		k := slices.ContainsFunc(chunk, keyed)
		for _, j := range chunk {
			args = appendRow(args, j, k)
		}
		query := b.q.insertFull
		if k || len(chunk) < rowsPerInsert {
			query = b.q.insertRows(len(chunk), k)
		}
		if again {
			query += onConflictID
		}
		if _, err := b.execIn(ctx, tx, uow, chunk, query, args...); err != nil {
			return err
		}
	}
	return b.record(ctx, tx, jobs)
}
