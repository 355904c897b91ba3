-- Requests to cancel a running job: its worker reads them (at once on a
-- NOTIFY, else within a second), cancels the attempt and fails the job as
-- cancelled. Times are Unix milliseconds.
CREATE TABLE queue_cancels (
    job_id       UUID PRIMARY KEY,
    requested_at BIGINT NOT NULL
);
