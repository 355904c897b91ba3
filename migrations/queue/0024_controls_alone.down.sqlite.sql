-- Back to the build of 0023_controls, which reads a row's record first:
-- nothing to undo. For the build before it, which reads the old columns
-- alone, every job this build stored is given them from its record (a
-- record that does not read is left as it is).
UPDATE jobs SET limit_max = json_extract(controls, '$.limit_max'), rate_max = json_extract(controls, '$.rate_max'), rate_per = json_extract(controls, '$.rate_per')
    WHERE json_valid(controls) AND limit_max IS NULL AND rate_max IS NULL;
UPDATE queue_held SET limit_max = json_extract(controls, '$.limit_max'), rate_max = json_extract(controls, '$.rate_max'), rate_per = json_extract(controls, '$.rate_per')
    WHERE json_valid(controls) AND limit_max IS NULL AND rate_max IS NULL;
UPDATE failed_jobs SET limit_max = json_extract(controls, '$.limit_max'), rate_max = json_extract(controls, '$.rate_max'), rate_per = json_extract(controls, '$.rate_per')
    WHERE json_valid(controls) AND limit_max IS NULL AND rate_max IS NULL;
UPDATE queue_steps SET limit_max = json_extract(controls, '$.limit_max'), rate_max = json_extract(controls, '$.rate_max'), rate_per = json_extract(controls, '$.rate_per')
    WHERE json_valid(controls) AND limit_max IS NULL AND rate_max IS NULL;
