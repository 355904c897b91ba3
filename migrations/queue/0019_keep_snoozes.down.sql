ALTER TABLE succeeded_jobs DROP COLUMN snoozes;
ALTER TABLE failed_jobs DROP COLUMN snoozes;
