DROP INDEX failed_jobs_queue;
