package limit

import (
	"context"
	"database/sql"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/sqlkit"
)

// The statements of concurrency limits that name no job's columns, in
// SQLite's words with LIST for a list of ids. (The statements that move
// a job between jobs and queue_held, which list its columns, are the
// database driver's, built from its one list of them.)
const (
	// Room counts the jobs of a key and whether any is held.
	Room = "SELECT (SELECT count(*) FROM jobs WHERE limit_key = ?), (SELECT count(*) FROM (SELECT 1 FROM queue_held WHERE limit_key = ? LIMIT 1) AS h)"
	// pgLock takes the locks of a JSON array of keys, in order.
	pgLock = "SELECT pg_advisory_xact_lock(hashtextextended('navree_limit:' || k, 0)) FROM jsonb_array_elements_text($1::jsonb) AS k ORDER BY k"
	// KeyOfHeld reads a held job's key; HeldErrors its errors;
	// HeldDelete deletes it.
	KeyOfHeld  = "SELECT limit_key FROM queue_held WHERE id = ?"
	HeldErrors = "SELECT errors FROM queue_held WHERE id = ?"
	HeldDelete = "DELETE FROM queue_held WHERE id = ?"
	// FreedOfIDs and FreedOfQueue read what deleting jobs frees (the database driver's freedBy).
	FreedOfIDs   = "SELECT limit_key, max(available_at) FROM jobs WHERE id IN LIST AND limit_key IS NOT NULL GROUP BY limit_key ORDER BY limit_key"
	FreedOfQueue = "SELECT limit_key, max(available_at) FROM jobs WHERE queue = ? AND limit_key IS NOT NULL GROUP BY limit_key ORDER BY limit_key"
	// KeysOfFailed reads the keys of failed jobs (a LIST of ids);
	// PurgeKeys the keys of a queue's jobs, in jobs or held (its
	// argument twice); PurgeHeld deletes a queue's held jobs.
	KeysOfFailed = "SELECT DISTINCT limit_key FROM failed_jobs WHERE id IN LIST"
	PurgeKeys    = "SELECT limit_key FROM jobs WHERE queue = ? AND limit_key IS NOT NULL UNION SELECT limit_key FROM queue_held WHERE queue = ?"
	PurgeHeld    = "DELETE FROM queue_held WHERE queue = ?"
	// The unique check of a limited job: the held jobs whose unique
	// window passed let their keys go, then the pending job holding the
	// key, in jobs or held.
	ExpireHeldUnique = "UPDATE queue_held SET unique_key = NULL WHERE unique_key = ? AND unique_until IS NOT NULL AND unique_until <= ?"
	FindPending      = "SELECT id FROM jobs WHERE unique_key = ? UNION ALL SELECT id FROM queue_held WHERE unique_key = ? LIMIT 1"
	// SQLiteAdmitted deletes the held jobs just let in (a JSON array of
	// ids) from queue_held.
	SQLiteAdmitted = "DELETE FROM queue_held WHERE id IN (SELECT value FROM json_each(?))"
)

// Lock takes the locks of keys, in order, on PostgreSQL, in one
// statement.
func Lock(ctx context.Context, tx *sql.Tx, d sqlkit.Dialect, keys []string) error {
	if !d.PG || len(keys) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, pgLock, sqlkit.List(sqlkit.Distinct(keys)))
	return err
}

// Keys are the keys of the limited jobs among jobs, and of those
// also unique their unique keys, marked by a line break (which no limit
// key holds): two dispatches of one unique key take turns, whatever
// their limit keys.
func Keys(jobs []*driver.Job) []string {
	var keys []string
	for _, j := range jobs {
		if j.LimitKey != "" {
			keys = append(keys, j.LimitKey)
			if j.UniqueKey != "" {
				keys = append(keys, "\n"+j.UniqueKey)
			}
		}
	}
	return keys
}

// Freed is a key some of whose jobs left jobs in a transaction, with
// the latest due time among them: the key's next held jobs go in due no
// earlier (a worker's next search starts near that time).
type Freed struct {
	Key string `json:"key"`
	Due int64  `json:"due"`
}

// FreedAt are keys, each once, whose held jobs go in due no earlier than
// due: 0 for a dispatch or a retry, whose jobs keep their own times.
func FreedAt(keys []string, due int64) []Freed {
	out := make([]Freed, 0, len(keys))
	for _, k := range sqlkit.Distinct(keys) {
		out = append(out, Freed{Key: k, Due: due})
	}
	return out
}

// RoomHeld lists the keys of held jobs that have room under the limit of
// their next held job: a skip over queue_held_next, one step a key, then
// each key's count.
func RoomHeld(d sqlkit.Dialect) string {
	return "WITH RECURSIVE k(key) AS (SELECT min(limit_key) FROM queue_held " +
		"UNION ALL SELECT (SELECT min(limit_key) FROM queue_held WHERE limit_key > k.key) FROM k WHERE k.key IS NOT NULL) " +
		"SELECT key FROM k WHERE key IS NOT NULL " +
		"AND (SELECT " + d.Setting("queue_held", "limit_max") + " FROM queue_held WHERE limit_key = k.key ORDER BY priority DESC, available_at, id LIMIT 1) > " +
		"(SELECT count(*) FROM jobs WHERE limit_key = k.key)"
}

// ReadmitKeys bounds the keys one transaction of the upkeep of held jobs (driver.UpkeepHeld) locks: each is
// a lock PostgreSQL keeps in its shared table until the commit.
const ReadmitKeys = 100

// FreedKeys are the keys of Freed.
func FreedKeys(keys []Freed) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Key
	}
	return out
}
