-- The history of jobs: each failed attempt's error travels with its job
-- (errors: a JSON array of {attempt, at, ms, worker, error}, oldest
-- first) into failed_jobs, and, where queue.keep_succeeded is set, jobs
-- that succeeded are kept in succeeded_jobs for that long, with their
-- last attempt's run and queue wait, its worker and the errors before it.
-- Times are Unix milliseconds on the queue's clock.
ALTER TABLE jobs ADD COLUMN errors TEXT;
ALTER TABLE failed_jobs ADD COLUMN errors TEXT;

CREATE TABLE succeeded_jobs (
    id           TEXT PRIMARY KEY,
    queue        TEXT NOT NULL,
    name         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    attempts     INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    run_ms       INTEGER NOT NULL,  -- how long the last attempt ran
    wait_ms      INTEGER NOT NULL,  -- how long it had been due when it started
    worker       TEXT,              -- the registered worker that ran it
    errors       TEXT,
    meta         TEXT
) WITHOUT ROWID;

-- Paging by when they finished, and pruning the oldest.
CREATE INDEX succeeded_jobs_finished_at ON succeeded_jobs (finished_at, id);
