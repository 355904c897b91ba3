DROP TRIGGER jobs_admit;
DROP TRIGGER queue_steps_fair;
DROP TRIGGER queue_held_fair;
DROP TRIGGER failed_jobs_fair;
DROP INDEX queue_fair_next;
DROP TABLE queue_fair;
DROP INDEX jobs_fair;
ALTER TABLE queue_steps DROP COLUMN fair_key;
ALTER TABLE queue_held DROP COLUMN fair_seq;
ALTER TABLE queue_held DROP COLUMN fair_key;
ALTER TABLE failed_jobs DROP COLUMN fair_key;
ALTER TABLE jobs DROP COLUMN fair_seq;
ALTER TABLE jobs DROP COLUMN fair_key;
CREATE TRIGGER jobs_admit AFTER DELETE ON jobs WHEN OLD.limit_key IS NOT NULL BEGIN
    INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at,
                      reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, errors)
    SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, max(available_at, OLD.available_at),
           reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, errors
    FROM queue_held
    WHERE id = (SELECT id FROM queue_held WHERE limit_key = OLD.limit_key ORDER BY priority DESC, available_at, id LIMIT 1)
      AND limit_max > (SELECT count(*) FROM jobs WHERE limit_key = OLD.limit_key);
    DELETE FROM queue_held WHERE limit_key = OLD.limit_key AND id IN (SELECT id FROM jobs WHERE limit_key = OLD.limit_key);
END;
