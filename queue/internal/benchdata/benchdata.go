// Package benchdata is the data the queue's benchmarks run on, the same
// for each (BenchmarkStats in dbdriver, BenchmarkPages in the dashboard),
// so that their figures compare.
package benchdata

// MillionJobs are the statements, by database ("sqlite", "postgres"),
// that fill a migrated queue with a million jobs, now at 10,000,000 ms: a
// backlog on the queue default (900,000 due, 50,000 delayed), 40,000 due
// on mail, 10,000 delayed on sync, every 1,000th job running (reserved at
// 9,990,000, not stale); and 100,000 failed jobs, on default and mail. The
// due job i is due at i ms.
var MillionJobs = map[string][]string{
	"sqlite": {
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000) " +
			"INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, reserved_at, created_at) " +
			"SELECT printf('01900000-0000-7000-8000-%012d', i), CASE WHEN i % 100 < 95 THEN 'default' WHEN i % 100 < 99 THEN 'mail' ELSE 'sync' END, " +
			"'contacts.export', '{\"company_id\":\"c1\"}', 3, 'fixed:0', 60000, CASE WHEN i % 1000 = 0 THEN 1 ELSE 0 END, " +
			"CASE WHEN i % 100 < 90 OR i % 100 BETWEEN 95 AND 98 THEN i ELSE 10000000 + i END, CASE WHEN i % 1000 = 0 THEN 9990000 END, 1 FROM n",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) " +
			"INSERT INTO failed_jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at) " +
			"SELECT printf('01900000-0000-7000-9000-%012d', i), CASE WHEN i % 2 = 0 THEN 'default' ELSE 'mail' END, 'mail.send', '{}', 3, 'fixed:0', 60000, 3, 'boom', 1, i FROM n",
		"ANALYZE",
	},
	"postgres": {
		"INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, available_at, reserved_at, created_at) " +
			"SELECT gen_random_uuid(), CASE WHEN i % 100 < 95 THEN 'default' WHEN i % 100 < 99 THEN 'mail' ELSE 'sync' END, " +
			"'contacts.export', '{\"company_id\":\"c1\"}', 3, 'fixed:0', 60000, CASE WHEN i % 1000 = 0 THEN 1 ELSE 0 END, " +
			"CASE WHEN i % 100 < 90 OR i % 100 BETWEEN 95 AND 98 THEN i ELSE 10000000 + i END, CASE WHEN i % 1000 = 0 THEN 9990000 END, 1 FROM generate_series(1, 1000000) AS i",
		"INSERT INTO failed_jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, attempts, error, created_at, failed_at) " +
			"SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'default' ELSE 'mail' END, 'mail.send', '{}', 3, 'fixed:0', 60000, 3, 'boom', 1, i FROM generate_series(1, 100000) AS i",
		"VACUUM ANALYZE jobs",
		"VACUUM ANALYZE failed_jobs",
	},
}
