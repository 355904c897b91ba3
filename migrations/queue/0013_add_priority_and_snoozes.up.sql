-- Flow control. A job's priority orders the jobs of its queue that are
-- due, higher first (0, the default, for most); it is kept by a failed
-- job for its retry and by a flow's held step. A job's snoozes count the
-- times its handler put it back to wait without spending an attempt.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE failed_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_steps ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;

-- Reservation of the jobs with a priority: jobs_waiting keeps ordering
-- the others by due time; this one holds only the waiting jobs whose
-- priority is not 0, so that a queue without any pays one look into an
-- empty index.
CREATE INDEX jobs_prioritized ON jobs (queue, priority DESC, available_at, id) WHERE reserved_at IS NULL AND priority <> 0;
