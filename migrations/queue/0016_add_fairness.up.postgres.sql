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
ALTER TABLE jobs ADD COLUMN fair_seq BIGINT;
ALTER TABLE failed_jobs ADD COLUMN fair_key TEXT;
ALTER TABLE queue_held ADD COLUMN fair_key TEXT;
ALTER TABLE queue_held ADD COLUMN fair_seq BIGINT;
ALTER TABLE queue_steps ADD COLUMN fair_key TEXT;

-- The fair search, and the queue's lowest place waiting (the round it
-- serves); jobs without a key stay out of it.
CREATE INDEX jobs_fair ON jobs (queue, fair_seq, available_at, id) WHERE reserved_at IS NULL AND fair_seq IS NOT NULL;

-- Each group's next place in its queue.
CREATE TABLE queue_fair (
    queue TEXT NOT NULL,
    key   TEXT NOT NULL,
    next  BIGINT NOT NULL,
    PRIMARY KEY (queue, key)
);

CREATE INDEX queue_fair_next ON queue_fair (queue, next);

-- The place of a job entering jobs with a key: its group's next, or the
-- round the queue serves (its lowest place waiting, of priority 0; with none,
-- the next after the last given), whichever is later. The group's row is locked
-- by the upsert, so two transactions never give one group's place
-- twice.
CREATE FUNCTION navree_fair() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    round BIGINT;
    place BIGINT;
BEGIN
    SELECT coalesce(
        (SELECT fair_seq FROM jobs WHERE queue = NEW.queue AND reserved_at IS NULL AND fair_seq IS NOT NULL AND priority = 0 ORDER BY fair_seq LIMIT 1),
        (SELECT next FROM queue_fair WHERE queue = NEW.queue ORDER BY next DESC LIMIT 1),
        1) INTO round;
    INSERT INTO queue_fair AS f (queue, key, next) VALUES (NEW.queue, NEW.fair_key, round + 1)
        ON CONFLICT (queue, key) DO UPDATE SET next = greatest(f.next, round) + 1
        RETURNING next - 1 INTO place;
    UPDATE jobs SET fair_seq = place WHERE id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_fair AFTER INSERT ON jobs FOR EACH ROW WHEN (NEW.fair_key IS NOT NULL AND NEW.fair_seq IS NULL) EXECUTE FUNCTION navree_fair();

-- A held job admitted keeps its fairness key (and is given its place).
CREATE OR REPLACE FUNCTION navree_admit(held_key TEXT, due_floor BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    queues INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('navree_limit:' || held_key, 0));
    WITH next AS (
        SELECT id
        FROM queue_held WHERE limit_key = held_key
        ORDER BY priority DESC, available_at, id
        LIMIT greatest(0, (SELECT limit_max FROM queue_held WHERE limit_key = held_key ORDER BY priority DESC, available_at, id LIMIT 1)
                          - (SELECT count(*) FROM jobs WHERE limit_key = held_key))
    ), moved AS (
        DELETE FROM queue_held WHERE id = ANY(ARRAY(SELECT id FROM next)) RETURNING *
    ), admitted AS (
        INSERT INTO jobs (id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at,
                          reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, errors)
        SELECT id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, greatest(available_at, due_floor),
               reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, errors
        FROM moved RETURNING queue
    )
    SELECT count(pg_notify('navree_jobs', q)) INTO queues FROM (SELECT DISTINCT queue AS q FROM admitted) AS a;
END
$$;
