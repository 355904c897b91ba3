-- A job's settings that no index needs (a concurrency limit's size, a
-- rate limit's) move into one record, controls: a JSON object that every
-- move between jobs, queue_held, failed_jobs and queue_steps carries as
-- one column, so that a feature's setting is a key of it, never a column
-- of four tables (driver.Controls). This build reads and writes controls
-- alone; the columns limit_max, rate_max and rate_per stay until the next
-- migration, for the build before this one, still running through a
-- rolling deploy, which reads and writes them: a trigger on each table
-- fills the record from the columns of a row that build writes, and the
-- columns from the record of a row this build writes.
ALTER TABLE jobs ADD COLUMN controls text;
ALTER TABLE queue_held ADD COLUMN controls text;
ALTER TABLE failed_jobs ADD COLUMN controls text;
ALTER TABLE queue_steps ADD COLUMN controls text;

CREATE FUNCTION navree_controls_of(limit_max integer, rate_max integer, rate_per bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT nullif(json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text, '{}')
$$;

UPDATE jobs SET controls = navree_controls_of(limit_max, rate_max, rate_per) WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;
UPDATE queue_held SET controls = navree_controls_of(limit_max, rate_max, rate_per);
UPDATE failed_jobs SET controls = navree_controls_of(limit_max, rate_max, rate_per) WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;
UPDATE queue_steps SET controls = navree_controls_of(limit_max, rate_max, rate_per) WHERE limit_max IS NOT NULL OR rate_max IS NOT NULL;

CREATE FUNCTION navree_controls() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.controls IS NULL THEN
        NEW.controls := navree_controls_of(NEW.limit_max, NEW.rate_max, NEW.rate_per);
    ELSIF NEW.controls ~ '^\s*\{\s*("[a-z_]+"\s*:\s*-?[0-9]+\s*,?\s*)*\}\s*$' THEN
        NEW.limit_max := (NEW.controls::jsonb ->> 'limit_max')::integer;
        NEW.rate_max := (NEW.controls::jsonb ->> 'rate_max')::integer;
        NEW.rate_per := (NEW.controls::jsonb ->> 'rate_per')::bigint;
    END IF;
    -- A record that is not an object of whole numbers (written by hand)
    -- leaves the columns NULL: the worker reads it, and fails the job
    -- naming the column.
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_controls BEFORE INSERT ON jobs FOR EACH ROW
    WHEN (NEW.controls IS NOT NULL OR NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL) EXECUTE FUNCTION navree_controls();
CREATE TRIGGER queue_held_controls BEFORE INSERT ON queue_held FOR EACH ROW EXECUTE FUNCTION navree_controls();
CREATE TRIGGER failed_jobs_controls BEFORE INSERT ON failed_jobs FOR EACH ROW
    WHEN (NEW.controls IS NOT NULL OR NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL) EXECUTE FUNCTION navree_controls();
CREATE TRIGGER queue_steps_controls BEFORE INSERT ON queue_steps FOR EACH ROW
    WHEN (NEW.controls IS NOT NULL OR NEW.limit_max IS NOT NULL OR NEW.rate_max IS NOT NULL) EXECUTE FUNCTION navree_controls();
