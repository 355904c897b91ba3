DROP INDEX jobs_fair_due;
DROP INDEX jobs_waiting;
CREATE INDEX jobs_waiting ON jobs (queue, available_at, id) WHERE reserved_at IS NULL;
