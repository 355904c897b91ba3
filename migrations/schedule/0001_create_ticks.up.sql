-- The ticks the schedulers claimed: one row an entry and scheduled
-- instant, written in the transaction that dispatches its job, so that
-- any number of schedulers dispatch each tick once. Times are Unix
-- milliseconds.
CREATE TABLE schedule_ticks (
    name          TEXT NOT NULL,     -- the entry's name
    tick_at       BIGINT NOT NULL,   -- the scheduled instant
    job_id        TEXT NOT NULL,     -- the job dispatched, or the pending one a WithoutOverlapping tick found
    skipped       INTEGER NOT NULL,  -- 1 when the tick found its last run still pending or running
    dispatched_at BIGINT NOT NULL,
    PRIMARY KEY (name, tick_at)
);
