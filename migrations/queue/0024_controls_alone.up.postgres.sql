-- From this build on a job's settings are its controls record alone
-- (migration 0023_controls): nothing writes or reads limit_max, rate_max
-- and rate_per any more. A job the build before 0023 stored during the
-- deploy of the one after it, with those columns alone, is given its
-- record here. The next build's migration drops the columns.
UPDATE jobs SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE controls IS NULL AND (limit_max IS NOT NULL OR rate_max IS NOT NULL);
UPDATE queue_held SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE controls IS NULL AND (limit_max IS NOT NULL OR rate_max IS NOT NULL);
UPDATE failed_jobs SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE controls IS NULL AND (limit_max IS NOT NULL OR rate_max IS NOT NULL);
UPDATE queue_steps SET controls = json_strip_nulls(json_build_object('limit_max', limit_max, 'rate_max', rate_max, 'rate_per', rate_per))::text
    WHERE controls IS NULL AND (limit_max IS NOT NULL OR rate_max IS NOT NULL);
