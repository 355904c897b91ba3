DROP TRIGGER jobs_admit;
DROP TABLE queue_held;
DROP INDEX failed_jobs_limited;
DROP INDEX jobs_limited;
ALTER TABLE failed_jobs DROP COLUMN limit_max;
ALTER TABLE failed_jobs DROP COLUMN limit_key;
ALTER TABLE jobs DROP COLUMN limit_max;
ALTER TABLE jobs DROP COLUMN limit_key;
