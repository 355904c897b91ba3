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
    id           TEXT PRIMARY KEY,
    queue        TEXT NOT NULL,
    name         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    backoff      TEXT NOT NULL,
    timeout_ms   INTEGER NOT NULL,
    unique_key   TEXT,
    unique_until INTEGER,
    attempts     INTEGER NOT NULL,
    available_at INTEGER NOT NULL,
    reserved_at  INTEGER,
    created_at   INTEGER NOT NULL,
    last_error   TEXT,
    meta         TEXT,
    flow         TEXT,
    priority     INTEGER NOT NULL,
    snoozes      INTEGER NOT NULL,
    limit_key    TEXT NOT NULL,
    limit_max    INTEGER NOT NULL,
    errors       TEXT
);

-- The next held job of a key: by priority, then due time, then id.
CREATE INDEX queue_held_next ON queue_held (limit_key, priority DESC, available_at, id);
CREATE INDEX queue_held_queue ON queue_held (queue);

-- A job of a key left jobs: its slot goes to the key's next held job, if
-- the key has room under that job's limit, due no earlier than the job
-- that left (a worker's next search starts near that one's due time).
-- (Every write to a SQLite file is serialized, so no other transaction
-- counts between the two.)
CREATE TRIGGER jobs_admit AFTER DELETE ON jobs WHEN OLD.limit_key IS NOT NULL BEGIN
    INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at,
                      reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, errors)
    SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, max(available_at, OLD.available_at),
           reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, errors
    FROM queue_held
    WHERE id = (SELECT id FROM queue_held WHERE limit_key = OLD.limit_key ORDER BY priority DESC, available_at, id LIMIT 1)
      AND limit_max > (SELECT count(*) FROM jobs WHERE limit_key = OLD.limit_key);
    DELETE FROM queue_held WHERE limit_key = OLD.limit_key AND id IN (SELECT id FROM jobs WHERE limit_key = OLD.limit_key);
END;
