-- A job's settings that no index needs (a concurrency limit's size, a
-- rate limit's) move into one record, controls: a JSON object that every
-- move between jobs, queue_held, failed_jobs and queue_steps carries as
-- one column, so that a feature's setting is a key of it, never a column
-- of four tables (driver.Controls). This build reads and writes controls
-- alone; the columns limit_max, rate_max and rate_per stay until the next
-- migration, for the build before this one, still running through a
-- rolling deploy, which reads and writes them: triggers on each table
-- fill the record from the columns of a row that build writes, and the
-- columns from the record of a row this build writes. queue_held's
-- limit_max is no longer NOT NULL (this build does not write it; the
-- trigger does, after the insert). A record that is not JSON (written
-- by hand) leaves the columns NULL: the worker reads it, and fails the
-- job naming the column.
ALTER TABLE jobs ADD COLUMN controls TEXT;
ALTER TABLE queue_held ADD COLUMN controls TEXT;
ALTER TABLE failed_jobs ADD COLUMN controls TEXT;
ALTER TABLE queue_steps ADD COLUMN controls TEXT;

UPDATE jobs SET controls = json_patch('{}', json_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))
    WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;
UPDATE queue_held SET controls = json_patch('{}', json_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per));
UPDATE failed_jobs SET controls = json_patch('{}', json_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))
    WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;
UPDATE queue_steps SET controls = json_patch('{}', json_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))
    WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;

ALTER TABLE queue_held DROP COLUMN limit_max;
ALTER TABLE queue_held ADD COLUMN limit_max INTEGER;
UPDATE queue_held SET limit_max = json_extract(controls, '$.limit_max');

CREATE TRIGGER jobs_controls_in AFTER INSERT ON jobs
    WHEN NEW.controls IS NULL AND (NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL)
BEGIN
    UPDATE jobs SET controls = json_patch('{}', json_object('limit_max', NEW.limit_max, 'rate_max', NEW.rate_max, 'rate_per', NEW.rate_per)) WHERE id = NEW.id;
END;
CREATE TRIGGER jobs_controls_out AFTER INSERT ON jobs WHEN json_valid(NEW.controls)
BEGIN
    UPDATE jobs SET limit_max = json_extract(NEW.controls, '$.limit_max'), rate_max = json_extract(NEW.controls, '$.rate_max'),
        rate_per = json_extract(NEW.controls, '$.rate_per') WHERE id = NEW.id;
END;
CREATE TRIGGER queue_held_controls_in AFTER INSERT ON queue_held
    WHEN NEW.controls IS NULL AND (NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL)
BEGIN
    UPDATE queue_held SET controls = json_patch('{}', json_object('limit_max', NEW.limit_max, 'rate_max', NEW.rate_max, 'rate_per', NEW.rate_per)) WHERE id = NEW.id;
END;
CREATE TRIGGER queue_held_controls_out AFTER INSERT ON queue_held WHEN json_valid(NEW.controls)
BEGIN
    UPDATE queue_held SET limit_max = json_extract(NEW.controls, '$.limit_max'), rate_max = json_extract(NEW.controls, '$.rate_max'),
        rate_per = json_extract(NEW.controls, '$.rate_per') WHERE id = NEW.id;
END;
CREATE TRIGGER failed_jobs_controls_in AFTER INSERT ON failed_jobs
    WHEN NEW.controls IS NULL AND (NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL)
BEGIN
    UPDATE failed_jobs SET controls = json_patch('{}', json_object('limit_max', NEW.limit_max, 'rate_max', NEW.rate_max, 'rate_per', NEW.rate_per)) WHERE id = NEW.id;
END;
CREATE TRIGGER failed_jobs_controls_out AFTER INSERT ON failed_jobs WHEN json_valid(NEW.controls)
BEGIN
    UPDATE failed_jobs SET limit_max = json_extract(NEW.controls, '$.limit_max'), rate_max = json_extract(NEW.controls, '$.rate_max'),
        rate_per = json_extract(NEW.controls, '$.rate_per') WHERE id = NEW.id;
END;
CREATE TRIGGER queue_steps_controls_in AFTER INSERT ON queue_steps
    WHEN NEW.controls IS NULL AND (NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL)
BEGIN
    UPDATE queue_steps SET controls = json_patch('{}', json_object('limit_max', NEW.limit_max, 'rate_max', NEW.rate_max, 'rate_per', NEW.rate_per)) WHERE job_id = NEW.job_id;
END;
CREATE TRIGGER queue_steps_controls_out AFTER INSERT ON queue_steps WHEN json_valid(NEW.controls)
BEGIN
    UPDATE queue_steps SET limit_max = json_extract(NEW.controls, '$.limit_max'), rate_max = json_extract(NEW.controls, '$.rate_max'),
        rate_per = json_extract(NEW.controls, '$.rate_per') WHERE job_id = NEW.job_id;
END;
