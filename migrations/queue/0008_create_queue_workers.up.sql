-- The worker processes at work: each queue:work registers itself when it
-- starts, beats its heart every few seconds and deletes its row when it
-- stops. A row whose heartbeat stopped is a worker gone (killed, or its
-- host lost); rows gone for an hour are deleted as the others beat.
-- started_at is on the queue's clock, heartbeat_at on the clock of
-- reservations (see docs/internals.md), both Unix milliseconds.
CREATE TABLE queue_workers (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    queues       TEXT NOT NULL,     -- comma-separated, highest priority first
    concurrency  INTEGER NOT NULL,
    version      TEXT NOT NULL,     -- the app's build: its module version or VCS revision
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    running      INTEGER NOT NULL   -- jobs running at the last heartbeat
);
