-- Rescue by heartbeat: each reservation keeps the registered worker that
-- holds it (NULL: a worker not registered, judged by the job's age as
-- before), and each worker its kind and the promise it made: how long
-- after its last heartbeat it counts as gone and its jobs are taken over.
ALTER TABLE jobs ADD COLUMN reserved_by TEXT;
ALTER TABLE queue_workers ADD COLUMN kind TEXT NOT NULL DEFAULT 'worker';
ALTER TABLE queue_workers ADD COLUMN rescue_ms BIGINT NOT NULL DEFAULT 15000;
