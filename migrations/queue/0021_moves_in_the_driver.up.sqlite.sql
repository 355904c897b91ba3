-- A job moves between jobs and the tables it waits in (queue_held,
-- failed_jobs, queue_steps) by the driver's statements, each built from
-- its one list of a job's columns; what a feature needs as a job moves is
-- done by the driver, in the move's transaction, so that a column or a
-- feature added is never again a rewrite of a trigger:
--
-- * A job of a concurrency key leaving jobs (a completion, a failure, a
--   cancel, a purge, a flow's cancel) lets the key's next held jobs in.
-- * A job entering jobs from another table (a retry, a held job let in,
--   a flow's step released) gets its fairness place, and its queue's
--   features are recorded, as a dispatch does for the jobs it stores.
--
-- Through a rolling deploy, what the workers of the build before this one
-- complete lets nothing in (the new build's workers let those keys' held
-- jobs in within a minute: Readmit), and what they retry enters without
-- its fairness place (it runs as a job without a key) or its queue's
-- record of its priority or rate limit (a worker that does not search for
-- them may take it out of turn).
DROP TRIGGER jobs_admit;
DROP TRIGGER failed_jobs_fair;
DROP TRIGGER queue_held_fair;
DROP TRIGGER queue_steps_fair;
DROP TRIGGER failed_jobs_features;
DROP TRIGGER queue_held_features;
DROP TRIGGER queue_steps_features;
