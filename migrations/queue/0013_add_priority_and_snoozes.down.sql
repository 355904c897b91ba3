DROP INDEX jobs_prioritized;
ALTER TABLE queue_steps DROP COLUMN priority;
ALTER TABLE failed_jobs DROP COLUMN priority;
ALTER TABLE jobs DROP COLUMN snoozes;
ALTER TABLE jobs DROP COLUMN priority;
