-- Concurrency limits. A job dispatched with a limit names a key (such as
-- account:42) and how many jobs of that key may be in jobs at once
-- (limit_max): waiting, delayed or running. Those over the limit are held
-- in queue_held, the same columns, until a job of their key leaves jobs
-- (it succeeded, failed, was cancelled or purged): the trigger
-- jobs_admit then moves the next held job of the key into jobs, in the
-- transaction that deleted it. A failed job keeps its key and limit for
-- its retry, which holds it again.
ALTER TABLE jobs ADD COLUMN limit_key TEXT;
ALTER TABLE jobs ADD COLUMN limit_max INTEGER;
ALTER TABLE failed_jobs ADD COLUMN limit_key TEXT;
ALTER TABLE failed_jobs ADD COLUMN limit_max INTEGER;

-- Counting the jobs of a key; jobs without one stay out of it. A retry of
-- failed jobs looks for limited ones in failed_jobs_limited.
CREATE INDEX jobs_limited ON jobs (limit_key) WHERE limit_key IS NOT NULL;
CREATE INDEX failed_jobs_limited ON failed_jobs (limit_key) WHERE limit_key IS NOT NULL;

CREATE TABLE queue_held (
    id           UUID PRIMARY KEY,
    queue        TEXT NOT NULL,
    name         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    backoff      TEXT NOT NULL,
    timeout_ms   BIGINT NOT NULL,
    unique_key   TEXT,
    unique_until BIGINT,
    attempts     INTEGER NOT NULL,
    available_at BIGINT NOT NULL,
    reserved_at  BIGINT,
    created_at   BIGINT NOT NULL,
    last_error   TEXT,
    meta         TEXT,
    flow         UUID,
    priority     INTEGER NOT NULL,
    snoozes      INTEGER NOT NULL,
    limit_key    TEXT NOT NULL,
    limit_max    INTEGER NOT NULL,
    errors       TEXT
);

-- The next held job of a key: by priority, then due time, then id.
CREATE INDEX queue_held_next ON queue_held (limit_key, priority DESC, available_at, id);
CREATE INDEX queue_held_queue ON queue_held (queue);

-- navree_admit moves the next held jobs of key into jobs, as many as the
-- key has room for under the limit of the first, each due no earlier
-- than due_floor (the due time of the job that left: a worker's next
-- search starts near it), and tells the workers of their queues (at
-- commit). One statement, for it runs once for each limited job that
-- leaves jobs. Every transaction that counts the jobs of a key takes the
-- key's lock first (a dispatch, this), and holds it to its commit, so
-- that no two fill one slot.
CREATE FUNCTION navree_admit(held_key TEXT, due_floor BIGINT) RETURNS void LANGUAGE plpgsql AS $$
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
                          reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, errors)
        SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, greatest(available_at, due_floor),
               reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, errors
        FROM moved RETURNING queue
    )
    SELECT count(pg_notify('navree_jobs', q)) INTO queues FROM (SELECT DISTINCT queue AS q FROM admitted) AS a;
END
$$;

CREATE FUNCTION navree_jobs_admit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM navree_admit(OLD.limit_key, OLD.available_at);
    RETURN NULL;
END
$$;

-- A job of a key left jobs: its slot goes to the key's next held job.
CREATE TRIGGER jobs_admit AFTER DELETE ON jobs FOR EACH ROW WHEN (OLD.limit_key IS NOT NULL) EXECUTE FUNCTION navree_jobs_admit();
