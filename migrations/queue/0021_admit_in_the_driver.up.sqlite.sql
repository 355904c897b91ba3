-- A job of a concurrency key leaving jobs lets the key's next held jobs
-- in: the driver now does so itself, in the transaction that moves the
-- job out (a completion, a failure, a cancel, a purge, a flow's cancel),
-- with a statement built from its one list of a job's columns, so that a
-- column added to jobs is never again a rewrite of this trigger. What
-- the workers of the build before this one complete through a rolling
-- deploy lets nothing in; the new build's workers let those keys' held
-- jobs in within a minute (Readmit).
DROP TRIGGER jobs_admit;
