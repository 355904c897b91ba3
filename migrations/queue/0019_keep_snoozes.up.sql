-- A job's snoozes (the times its handler put it back to wait without
-- spending an attempt) are kept when it fails, for its page and
-- queue:job, and when it succeeds, in the history; a retry starts them
-- over, as it does its attempts.
ALTER TABLE failed_jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE succeeded_jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
