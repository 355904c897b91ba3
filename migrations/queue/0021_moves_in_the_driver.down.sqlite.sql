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

CREATE TRIGGER failed_jobs_fair AFTER DELETE ON failed_jobs WHEN OLD.fair_key IS NOT NULL BEGIN
    INSERT INTO queue_fair (queue, key, next)
        SELECT j.queue, j.fair_key, coalesce(
            (SELECT fair_seq FROM jobs WHERE queue = j.queue AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1),
            (SELECT next FROM queue_fair WHERE queue = j.queue ORDER BY next DESC LIMIT 1),
            1) + 1
        FROM jobs j WHERE j.id = OLD.id AND j.fair_key IS NOT NULL AND j.fair_seq IS NULL
        ON CONFLICT (queue, key) DO UPDATE SET next = max(next, excluded.next - 1) + 1;
    UPDATE jobs SET fair_seq = (SELECT next - 1 FROM queue_fair WHERE queue = jobs.queue AND key = jobs.fair_key)
        WHERE id = OLD.id AND fair_key IS NOT NULL AND fair_seq IS NULL;
END;

CREATE TRIGGER queue_held_fair AFTER DELETE ON queue_held WHEN OLD.fair_key IS NOT NULL BEGIN
    INSERT INTO queue_fair (queue, key, next)
        SELECT j.queue, j.fair_key, coalesce(
            (SELECT fair_seq FROM jobs WHERE queue = j.queue AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1),
            (SELECT next FROM queue_fair WHERE queue = j.queue ORDER BY next DESC LIMIT 1),
            1) + 1
        FROM jobs j WHERE j.id = OLD.id AND j.fair_key IS NOT NULL AND j.fair_seq IS NULL
        ON CONFLICT (queue, key) DO UPDATE SET next = max(next, excluded.next - 1) + 1;
    UPDATE jobs SET fair_seq = (SELECT next - 1 FROM queue_fair WHERE queue = jobs.queue AND key = jobs.fair_key)
        WHERE id = OLD.id AND fair_key IS NOT NULL AND fair_seq IS NULL;
END;

CREATE TRIGGER queue_steps_fair AFTER UPDATE OF state ON queue_steps WHEN NEW.state = 'queued' AND NEW.fair_key IS NOT NULL BEGIN
    INSERT INTO queue_fair (queue, key, next)
        SELECT j.queue, j.fair_key, coalesce(
            (SELECT fair_seq FROM jobs WHERE queue = j.queue AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1),
            (SELECT next FROM queue_fair WHERE queue = j.queue ORDER BY next DESC LIMIT 1),
            1) + 1
        FROM jobs j WHERE j.id = NEW.job_id AND j.fair_key IS NOT NULL AND j.fair_seq IS NULL
        ON CONFLICT (queue, key) DO UPDATE SET next = max(next, excluded.next - 1) + 1;
    UPDATE jobs SET fair_seq = (SELECT next - 1 FROM queue_fair WHERE queue = jobs.queue AND key = jobs.fair_key)
        WHERE id = NEW.job_id AND fair_key IS NOT NULL AND fair_seq IS NULL;
END;

CREATE TRIGGER failed_jobs_features AFTER DELETE ON failed_jobs
WHEN OLD.priority <> 0 OR OLD.rate_key IS NOT NULL OR OLD.fair_key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO queue_features (queue, feature)
        SELECT queue, 1 FROM jobs WHERE id = OLD.id AND priority <> 0
        UNION ALL SELECT queue, 2 FROM jobs WHERE id = OLD.id AND rate_key IS NOT NULL
        UNION ALL SELECT queue, 4 FROM jobs WHERE id = OLD.id AND fair_key IS NOT NULL;
END;

CREATE TRIGGER queue_held_features AFTER DELETE ON queue_held
WHEN OLD.priority <> 0 OR OLD.rate_key IS NOT NULL OR OLD.fair_key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO queue_features (queue, feature)
        SELECT queue, 1 FROM jobs WHERE id = OLD.id AND priority <> 0
        UNION ALL SELECT queue, 2 FROM jobs WHERE id = OLD.id AND rate_key IS NOT NULL
        UNION ALL SELECT queue, 4 FROM jobs WHERE id = OLD.id AND fair_key IS NOT NULL;
END;

CREATE TRIGGER queue_steps_features AFTER UPDATE OF state ON queue_steps
WHEN NEW.state = 'queued' AND (NEW.priority <> 0 OR NEW.rate_key IS NOT NULL OR NEW.fair_key IS NOT NULL) BEGIN
    INSERT OR IGNORE INTO queue_features (queue, feature)
        SELECT queue, 1 FROM jobs WHERE id = NEW.job_id AND priority <> 0
        UNION ALL SELECT queue, 2 FROM jobs WHERE id = NEW.job_id AND rate_key IS NOT NULL
        UNION ALL SELECT queue, 4 FROM jobs WHERE id = NEW.job_id AND fair_key IS NOT NULL;
END;
