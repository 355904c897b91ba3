-- Counting the failed jobs of each queue (Queue.Stats), and paging those
-- of one queue (Queue.Jobs), read this index instead of the whole table.
CREATE INDEX failed_jobs_queue ON failed_jobs (queue, failed_at, id);
