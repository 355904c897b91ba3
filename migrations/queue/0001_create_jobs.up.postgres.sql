-- Jobs waiting, delayed or running. Times are Unix milliseconds.
CREATE TABLE jobs (
    id           UUID PRIMARY KEY,          -- UUID v7
    queue        TEXT NOT NULL,
    name         TEXT NOT NULL,             -- the job type, such as contacts.export
    payload      TEXT NOT NULL,             -- JSON, kept byte for byte
    max_attempts INTEGER NOT NULL,
    backoff      TEXT NOT NULL,             -- exponential:BASE_MS:MAX_MS or fixed:MS
    timeout_ms   BIGINT NOT NULL,           -- 0: no time limit
    unique_key   TEXT,                      -- set while the job is unique
    unique_until BIGINT,                    -- when uniqueness lapses; NULL: while pending
    attempts     INTEGER NOT NULL DEFAULT 0, -- attempts started; the current reservation's token
    available_at BIGINT NOT NULL,
    reserved_at  BIGINT,                    -- NULL while waiting
    created_at   BIGINT NOT NULL,
    last_error   TEXT
);

-- Reservation: the next waiting job of a queue.
CREATE INDEX jobs_waiting ON jobs (queue, available_at, id) WHERE reserved_at IS NULL;
-- Takeover: reservations that have gone stale.
CREATE INDEX jobs_reserved ON jobs (reserved_at) WHERE reserved_at IS NOT NULL;
-- One pending job per unique key; jobs that are not unique stay out of it.
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key) WHERE unique_key IS NOT NULL;

CREATE TABLE failed_jobs (
    id           UUID PRIMARY KEY,
    queue        TEXT NOT NULL,
    name         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    backoff      TEXT NOT NULL,
    timeout_ms   BIGINT NOT NULL,
    attempts     INTEGER NOT NULL,
    error        TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    failed_at    BIGINT NOT NULL
);

CREATE INDEX failed_jobs_failed_at ON failed_jobs (failed_at, id);
