-- What travels with a job beside its payload (trace context, the
-- payload's version): a JSON object, kept through retries, never logged.
ALTER TABLE jobs ADD COLUMN meta TEXT;
ALTER TABLE failed_jobs ADD COLUMN meta TEXT;
