-- queue:restart: each registered worker's row keeps when a restart was
-- asked of it (Unix milliseconds, on the clock of the process that asked;
-- NULL: none). A worker learns it at its next heartbeat, finishes its
-- running jobs and stops; one registered after the request has no mark.
ALTER TABLE queue_workers ADD COLUMN restart_at BIGINT;
