// Package unique is uniqueness and debounce, as the storage keeps them: a
// job with a unique key (driver.Job.UniqueKey) is not stored while a
// pending job holds the key, unless that job's window (UniqueUntil) has
// passed; a debounced one (DebounceMaxMs) has the waiting job that holds
// its key take its payload, meta and due time instead, no later than
// that job's creation and MaxWait.
//
// It holds its statements, the rule of a debounce (Debounce, the same as
// the statement's), the memory driver's keys (Memory), and the
// conformance tests of uniqueness and debounce on the three drivers. The
// inserts that check a key, which list a job's columns, are the database
// driver's insert paths (dbdriver/insert.go), built from its one list of
// them; a unique job with a concurrency limit is checked against the
// held jobs too (package limit's FindPending).
package unique

import "github.com/navree/navree/queue/internal/driver"

// The statements of uniqueness and debounce that name no job's columns,
// in SQLite's words.
const (
	// Expire lets the jobs whose unique window passed by now give their
	// key up: key, now.
	Expire = "UPDATE jobs SET unique_key = NULL WHERE unique_key = ? AND unique_until IS NOT NULL AND unique_until <= ?"
	// Find reads the id of the job holding a key.
	Find = "SELECT id FROM jobs WHERE unique_key = ? AND unique_key IS NOT NULL"
	// ReleaseKey has a running job give its key up, for a debounced
	// dispatch that comes after it started.
	ReleaseKey = "UPDATE jobs SET unique_key = NULL WHERE unique_key = ? AND reserved_at IS NOT NULL"
	// Debounced has the waiting job that holds a key take a debounced
	// dispatch's payload, meta and due time, the time no later than its
	// creation and MaxWait (Debounce in SQL): payload, meta, due, max
	// wait, due, max wait, key.
	Debounced = "UPDATE jobs SET payload = ?, meta = ?, available_at = CASE WHEN ? < created_at + ? THEN ? ELSE created_at + ? END " +
		"WHERE unique_key = ? AND reserved_at IS NULL RETURNING id"
)

// Debounce returns the waiting job h, holder of the key of the debounced
// dispatch j, as it is after j: j's payload and meta, and j's due time
// no later than h's creation and j's MaxWait. h is not changed: the
// memory driver stores the copy in its place.
func Debounce(h, j *driver.Job) *driver.Job {
	c := *h
	c.Payload, c.Meta, c.AvailableAt = j.Payload, j.Meta, min(j.AvailableAt, h.CreatedAt+j.DebounceMaxMs)
	return &c
}
