-- The clock of reservations on SQLite: the host's monotonic clock, which
-- no step of the system clock moves, counted from the host's boot as the
-- first worker after that boot saw it (anchor_ms: Unix milliseconds). One
-- row; every process on the file (all on one host) reads the same.
CREATE TABLE queue_clock (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    boot_id   TEXT NOT NULL,
    anchor_ms INTEGER NOT NULL
);
