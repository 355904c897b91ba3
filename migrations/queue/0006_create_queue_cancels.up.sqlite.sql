-- Requests to cancel a running job: its worker reads them (within a second:
-- a worker looks once a second), cancels the attempt and fails the job as
-- cancelled. Times are Unix milliseconds.
CREATE TABLE queue_cancels (
    job_id       TEXT PRIMARY KEY,
    requested_at BIGINT NOT NULL
);
