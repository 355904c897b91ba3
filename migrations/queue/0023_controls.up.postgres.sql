-- A job's settings that no index needs (a concurrency limit's size, a
-- rate limit's) move into one record, controls: a JSON object that every
-- move between jobs, queue_held, failed_jobs and queue_steps carries as
-- one column, so that a feature's setting is a key of it, never a column
-- of four tables (driver.Controls). Every stored job is given its record
-- here. The columns limit_max, rate_max and rate_per stay for the build
-- before this one, still running through a rolling deploy, which reads
-- and writes them alone: this build writes them beside the record and
-- reads them where a row has none. The next build stops (its migration
-- gives every row its record again), and the one after drops them.
-- queue_held's limit_max is no longer NOT NULL, for the next build, which
-- does not write it; the admission reads the record first. No
-- trigger: those on jobs, however narrow their conditions, cost the bulk
-- dispatch a fifth on PostgreSQL (COPY inserts row by row under a BEFORE
-- trigger) and a seventh on SQLite (it runs a trigger's program for
-- every row): docs/benchmarks.md.
ALTER TABLE jobs ADD COLUMN controls text;
ALTER TABLE queue_held ADD COLUMN controls text;
ALTER TABLE failed_jobs ADD COLUMN controls text;
ALTER TABLE queue_steps ADD COLUMN controls text;

UPDATE jobs SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;
UPDATE queue_held SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text;
UPDATE failed_jobs SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;
UPDATE queue_steps SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;

ALTER TABLE queue_held ALTER COLUMN limit_max DROP NOT NULL;
