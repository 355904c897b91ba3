package flow

// The statements of the flows' own tables (queue_flows, queue_steps,
// queue_edges, queue_results), in SQLite's words with LIST for a list of
// ids (one argument: a JSON array), which a database driver rewrites for
// its database (dbdriver/flow.go runs them, in its Tx). Those that also
// read or write the jobs' tables are the driver's.
const (
	Columns = "id, kind, name, created_at, finished_at, state, cancel_on_failure, total, pending, succeeded, failed"
	// StepColumns are a step's own columns of queue_steps; a driver's
	// insert of steps adds the settings of their jobs.
	StepColumns = "job_id, flow_id, seq, step, role, state, waiting, failed_deps, run_if_failed, delay_ms"

	Insert  = "INSERT INTO queue_flows (" + Columns + ") VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, 0, 0)"
	Lock    = "SELECT kind, pending FROM queue_flows WHERE id = ?"
	Grow    = "UPDATE queue_flows SET total = total + ?, pending = pending + ? WHERE id = ? AND pending > 0"
	LastSeq = "SELECT coalesce(max(seq), 0) FROM queue_steps WHERE flow_id = ?"
	Read    = "SELECT " + Columns + " FROM queue_flows WHERE id = ?"
	List    = "SELECT " + Columns + " FROM queue_flows WHERE (kind = ? OR ? = '') AND id < ? ORDER BY id DESC LIMIT ?"
	Steps   = "SELECT s.job_id, s.step, s.role, s.state, s.waiting, s.failed_deps, s.run_if_failed, s.error, s.ended_at, " +
		"s.queue, s.name, s.payload, s.max_attempts, s.timeout_ms, s.delay_ms, r.result FROM queue_steps s " +
		"LEFT JOIN queue_results r ON r.job_id = s.job_id WHERE s.flow_id = ? ORDER BY s.seq"
	Edges    = "SELECT from_id, to_id FROM queue_edges WHERE flow_id = ?"
	Upstream = "SELECT s.job_id, s.step, s.role, s.state, s.waiting, s.failed_deps, s.run_if_failed, s.error, s.ended_at, " +
		"s.queue, s.name, s.payload, s.max_attempts, s.timeout_ms, s.delay_ms, r.result FROM queue_steps s " +
		"LEFT JOIN queue_results r ON r.job_id = s.job_id WHERE s.job_id IN (SELECT from_id FROM queue_edges WHERE to_id = ?) " +
		"OR s.role = 'step' AND s.flow_id = (SELECT flow_id FROM queue_steps c WHERE c.job_id = ? AND c.role <> 'step') ORDER BY s.seq"

	EndSteps = "UPDATE queue_steps SET state = ?, error = ?, ended_at = ? " +
		"WHERE job_id IN LIST AND state IN ('held', 'queued') " +
		"RETURNING job_id, flow_id, role, EXISTS (SELECT 1 FROM queue_edges WHERE queue_edges.from_id = queue_steps.job_id)"
	Satisfy = "UPDATE queue_steps SET waiting = queue_steps.waiting - e.n, failed_deps = queue_steps.failed_deps + e.n * ? " +
		"FROM (SELECT to_id, count(*) AS n FROM queue_edges WHERE from_id IN LIST GROUP BY to_id) AS e " +
		"WHERE queue_steps.job_id = e.to_id AND queue_steps.state = 'held' " +
		"RETURNING queue_steps.job_id, queue_steps.flow_id, queue_steps.waiting, queue_steps.failed_deps, queue_steps.run_if_failed"
	Tally = "UPDATE queue_flows SET pending = pending - ?, succeeded = succeeded + ?, failed = failed + ?, " +
		"finished_at = CASE WHEN pending = ? AND finished_at IS NULL THEN ? ELSE finished_at END, " +
		"state = CASE WHEN pending = ? AND state = 'running' THEN CASE WHEN failed + ? > 0 THEN 'failed' ELSE 'succeeded' END ELSE state END " +
		"WHERE id = ? RETURNING " + Columns
	// A released step with a concurrency limit is held by it, and let in
	// as its key has room (admit): StepKeys are the keys, stepHold the move.
	StepKeys       = "SELECT DISTINCT limit_key FROM queue_steps WHERE job_id IN LIST AND state = 'held' AND limit_key IS NOT NULL"
	Queued         = "UPDATE queue_steps SET state = 'queued', payload = NULL WHERE job_id IN LIST AND state = 'held'"
	HeldOf         = "SELECT job_id FROM queue_steps WHERE flow_id = ? AND role = ? AND state = 'held' ORDER BY seq"
	Cancel         = "UPDATE queue_flows SET state = 'cancelled' WHERE id = ? AND pending > 0"
	CallbacksAgain = "UPDATE queue_steps SET state = 'held', error = NULL, ended_at = NULL WHERE flow_id = ? AND role <> 'step' " +
		"AND (state = 'cancelled' OR role = 'then' AND state = 'skipped')"
	StepsBack = "UPDATE queue_steps SET state = 'queued', error = NULL, ended_at = NULL WHERE job_id IN LIST"
	StepsHeld = "UPDATE queue_steps SET state = 'held', error = NULL, ended_at = NULL, failed_deps = 0, waiting = (" +
		"SELECT count(*) FROM queue_edges e JOIN queue_steps d ON d.job_id = e.from_id WHERE e.to_id = queue_steps.job_id AND d.state <> 'succeeded') " +
		"WHERE job_id IN LIST RETURNING job_id, waiting"
	Again = "UPDATE queue_flows SET pending = pending + ?, failed = failed - ?, finished_at = NULL, state = 'running' WHERE id = ?"

	InsertResult = "INSERT INTO queue_results (job_id, flow_id, result, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING"

	Old               = "SELECT id FROM queue_flows WHERE finished_at < ? ORDER BY finished_at LIMIT ?"
	PruneResults      = "DELETE FROM queue_results WHERE flow_id IN LIST"
	PruneEdges        = "DELETE FROM queue_edges WHERE flow_id IN LIST"
	PruneSteps        = "DELETE FROM queue_steps WHERE flow_id IN LIST"
	PruneFlows        = "DELETE FROM queue_flows WHERE id IN LIST"
	PruneLooseResults = "DELETE FROM queue_results WHERE job_id IN (SELECT job_id FROM queue_results WHERE flow_id IS NULL AND created_at < ? ORDER BY created_at LIMIT ?)"
)
