DROP TABLE succeeded_jobs;
ALTER TABLE failed_jobs DROP COLUMN errors;
ALTER TABLE jobs DROP COLUMN errors;
