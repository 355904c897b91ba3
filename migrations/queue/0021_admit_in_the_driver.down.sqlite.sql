CREATE TRIGGER jobs_admit AFTER DELETE ON jobs WHEN OLD.limit_key IS NOT NULL BEGIN
    INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at,
                      reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, errors)
    SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, max(available_at, OLD.available_at),
           reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, errors
    FROM queue_held
    WHERE id = (SELECT id FROM queue_held WHERE limit_key = OLD.limit_key ORDER BY priority DESC, available_at, id LIMIT 1)
      AND limit_max > (SELECT count(*) FROM jobs WHERE limit_key = OLD.limit_key);
    DELETE FROM queue_held WHERE limit_key = OLD.limit_key AND id IN (SELECT id FROM jobs WHERE limit_key = OLD.limit_key);
END;
