-- Fairness between groups (tenants). A job dispatched with a fairness key
-- (fair_key, such as account:42) is given a place in its queue's rounds
-- as it enters jobs (fair_seq, by the trigger below): its group's next
-- place, or the round the queue is serving if later. Taken by fair_seq,
-- the groups' jobs come in turns: the n-th job of every group waiting
-- before the (n+1)-th of any, so a group with a million jobs holds a
-- group with ten back by about ten rounds, not a million jobs. The key
-- follows the job everywhere it goes (a failed job, a held one, a flow's
-- step); its place is given again each time it enters jobs.
ALTER TABLE jobs ADD COLUMN fair_key TEXT;
ALTER TABLE jobs ADD COLUMN fair_seq INTEGER;
ALTER TABLE failed_jobs ADD COLUMN fair_key TEXT;
ALTER TABLE queue_held ADD COLUMN fair_key TEXT;
ALTER TABLE queue_held ADD COLUMN fair_seq INTEGER;
ALTER TABLE queue_steps ADD COLUMN fair_key TEXT;

-- The fair search, and the queue's lowest place waiting (the round it
-- serves); jobs without a key stay out of it.
CREATE INDEX jobs_fair ON jobs (queue, fair_seq, available_at, id) WHERE reserved_at IS NULL AND fair_seq IS NOT NULL;

-- Each group's next place in its queue.
CREATE TABLE queue_fair (
    queue TEXT NOT NULL,
    key   TEXT NOT NULL,
    next  INTEGER NOT NULL,
    PRIMARY KEY (queue, key)
) WITHOUT ROWID;

CREATE INDEX queue_fair_next ON queue_fair (queue, next);

-- The place of a job entering jobs with a key: its group's next, or the
-- round the queue serves (its lowest place waiting, of priority 0; with none,
-- the next after the last given), whichever is later. A dispatch gives its jobs
-- their places itself, as it stores them (a trigger on jobs would run for
-- every row stored, keyed or not: a bulk dispatch was a third slower for
-- it); these give theirs to the jobs that move into jobs from another
-- table, as that table lets go of them: a retried failed job, a held job
-- let in by its limit, a flow's step released.
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

-- A held job admitted keeps its fairness key (and is given its place).
DROP TRIGGER jobs_admit;
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
