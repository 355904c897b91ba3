-- Rate limits. A job dispatched with a rate limit names a key (its job
-- type's name, or a key of its own such as stripe:42) and a rate: at most
-- rate_max of the key's jobs start in any window of rate_per
-- milliseconds. Its columns follow it everywhere it goes: a failed job,
-- a held one (queue_held), a flow's step (queue_steps). The workers keep
-- each key's window in queue_rates: the log of its reservations, by the
-- end of the slice of the window each started in (see the queue's
-- internals). A job over its limit is never reserved: it waits in jobs,
-- and spends no attempt.
ALTER TABLE jobs ADD COLUMN rate_key TEXT;
ALTER TABLE jobs ADD COLUMN rate_max INTEGER;
ALTER TABLE jobs ADD COLUMN rate_per BIGINT;
ALTER TABLE failed_jobs ADD COLUMN rate_key TEXT;
ALTER TABLE failed_jobs ADD COLUMN rate_max INTEGER;
ALTER TABLE failed_jobs ADD COLUMN rate_per BIGINT;
ALTER TABLE queue_held ADD COLUMN rate_key TEXT;
ALTER TABLE queue_held ADD COLUMN rate_max INTEGER;
ALTER TABLE queue_held ADD COLUMN rate_per BIGINT;
ALTER TABLE queue_steps ADD COLUMN rate_key TEXT;
ALTER TABLE queue_steps ADD COLUMN rate_max INTEGER;
ALTER TABLE queue_steps ADD COLUMN rate_per BIGINT;

-- The workers' prober looks for queues with a waiting job of a rate limit
-- (their searches then leave out the keys whose window is full); jobs
-- without one stay out of the index.
CREATE INDEX jobs_rated ON jobs (queue) WHERE rate_key IS NOT NULL AND reserved_at IS NULL;

-- A key's window: when it next has room (reopen_at, for the searches and
-- queue:status), when it is empty (empty_at: a row past it is pruned,
-- as a key without a row is open), and the last rate it was taken at.
CREATE TABLE queue_rates (
    key       TEXT PRIMARY KEY,
    log       TEXT NOT NULL,
    reopen_at BIGINT NOT NULL,
    empty_at  BIGINT NOT NULL,
    rate_max  INTEGER NOT NULL,
    rate_per  BIGINT NOT NULL
);

CREATE INDEX queue_rates_reopen ON queue_rates (reopen_at);
CREATE INDEX queue_rates_empty ON queue_rates (empty_at);

-- A held job admitted keeps its rate limit.
CREATE OR REPLACE FUNCTION navree_admit(held_key TEXT, due_floor BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    queues INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('navree_limit:' || held_key, 0));
    WITH next AS (
        SELECT id
        FROM queue_held WHERE limit_key = held_key
        ORDER BY priority DESC, available_at, id
        LIMIT greatest(0, (SELECT limit_max FROM queue_held WHERE limit_key = held_key ORDER BY priority DESC, available_at, id LIMIT 1)
                          - (SELECT count(*) FROM jobs WHERE limit_key = held_key))
    ), moved AS (
        DELETE FROM queue_held WHERE id = ANY(ARRAY(SELECT id FROM next)) RETURNING *
    ), admitted AS (
        INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at,
                          reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, errors)
        SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, greatest(available_at, due_floor),
               reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, errors
        FROM moved RETURNING queue
    )
    SELECT count(pg_notify('navree_jobs', q)) INTO queues FROM (SELECT DISTINCT queue AS q FROM admitted) AS a;
END
$$;
