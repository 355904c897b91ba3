// Package limit is concurrency limits, as the storage keeps them: at
// most driver.Job.LimitMax jobs of a key (driver.Job.LimitKey) are in
// jobs, waiting or running; the others wait in queue_held, which no
// search reads, and go in, by priority, due time and id, as the jobs of
// their key leave.
//
// It holds the statements of limits that name no job's columns and the
// locks and keys of a transaction (Lock, Keys, Freed, FreedAt), the
// memory driver's counts and held jobs (Memory), and the conformance
// tests of limits on the three drivers. The moves between jobs and
// queue_held, which list a job's columns, are the database driver's
// (dbdriver/limit.go and moves.go: admit, holdAll, insertLimited,
// readmit), built from its one list of them.
package limit
