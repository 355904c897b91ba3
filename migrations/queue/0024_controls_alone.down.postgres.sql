-- Back to the build of 0023_controls, which reads a row's record first:
-- nothing to undo. For the build before it, which reads the old columns
-- alone, every job this build stored is given them from its record (a
-- record that does not read is left as it is).
UPDATE jobs SET limit_max = substring(controls from '"limit_max"\s*:\s*([0-9]+)')::bigint,
    rate_max = substring(controls from '"rate_max"\s*:\s*([0-9]+)')::bigint, rate_per = substring(controls from '"rate_per"\s*:\s*([0-9]+)')::bigint
    WHERE controls IS NOT NULL AND limit_max IS NULL AND rate_max IS NULL;
UPDATE queue_held SET limit_max = substring(controls from '"limit_max"\s*:\s*([0-9]+)')::bigint,
    rate_max = substring(controls from '"rate_max"\s*:\s*([0-9]+)')::bigint, rate_per = substring(controls from '"rate_per"\s*:\s*([0-9]+)')::bigint
    WHERE controls IS NOT NULL AND limit_max IS NULL AND rate_max IS NULL;
UPDATE failed_jobs SET limit_max = substring(controls from '"limit_max"\s*:\s*([0-9]+)')::bigint,
    rate_max = substring(controls from '"rate_max"\s*:\s*([0-9]+)')::bigint, rate_per = substring(controls from '"rate_per"\s*:\s*([0-9]+)')::bigint
    WHERE controls IS NOT NULL AND limit_max IS NULL AND rate_max IS NULL;
UPDATE queue_steps SET limit_max = substring(controls from '"limit_max"\s*:\s*([0-9]+)')::bigint,
    rate_max = substring(controls from '"rate_max"\s*:\s*([0-9]+)')::bigint, rate_per = substring(controls from '"rate_per"\s*:\s*([0-9]+)')::bigint
    WHERE controls IS NOT NULL AND limit_max IS NULL AND rate_max IS NULL;
