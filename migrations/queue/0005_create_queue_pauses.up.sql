-- Paused queues: no worker takes a job of a queue named here (or of any
-- queue, for the row '*') until queue:resume deletes its row. Times are
-- Unix milliseconds.
CREATE TABLE queue_pauses (
    queue     TEXT PRIMARY KEY,
    paused_at BIGINT NOT NULL
);
