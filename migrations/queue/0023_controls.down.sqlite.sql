ALTER TABLE jobs DROP COLUMN controls;
ALTER TABLE queue_held DROP COLUMN controls;
ALTER TABLE failed_jobs DROP COLUMN controls;
ALTER TABLE queue_steps DROP COLUMN controls;
