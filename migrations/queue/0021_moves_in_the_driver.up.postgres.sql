-- A job of a concurrency key leaving jobs lets the key's next held jobs
-- in: the driver now does so itself, in the transaction that moves the
-- job out (a completion, a failure, a cancel, a purge, a flow's cancel),
-- with a statement built from its one list of a job's columns, so that a
-- column added to jobs is never again a rewrite of this function.
DROP TRIGGER jobs_admit ON jobs;
DROP FUNCTION navree_jobs_admit();
-- navree_admit stays until a later migration: the workers of the build
-- before this one call it as they dispatch, through a rolling deploy.
-- What they complete meanwhile lets nothing in; the new build's workers
-- let those keys' held jobs in within a minute (Readmit).
