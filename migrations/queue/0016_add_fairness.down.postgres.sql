DROP TRIGGER jobs_fair ON jobs;
DROP FUNCTION navree_fair();
DROP INDEX queue_fair_next;
DROP TABLE queue_fair;
DROP INDEX jobs_fair;
ALTER TABLE queue_steps DROP COLUMN fair_key;
ALTER TABLE queue_held DROP COLUMN fair_seq;
ALTER TABLE queue_held DROP COLUMN fair_key;
ALTER TABLE failed_jobs DROP COLUMN fair_key;
ALTER TABLE jobs DROP COLUMN fair_seq;
ALTER TABLE jobs DROP COLUMN fair_key;
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
