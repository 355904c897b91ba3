-- What a queue's jobs need of its search: a row for each feature that a
-- job in jobs has (1: a priority other than 0, 2: a rate limit, 4: a
-- fairness key), written by the transaction that stores the job, by the
-- trigger below, whichever way the job enters jobs. Every search of a
-- reservation takes nothing while a row names a feature it does not do
-- (it reads the rows in its own snapshot), so that a worker's belief
-- about a queue can make its search slower, never wrong: it reads the
-- rows and searches again. A worker's prober deletes the row of a
-- feature no job of the queue has any more.
--
-- The trigger holds a shared lock of the queue's rows (an advisory lock
-- of the schema and the queue) until its transaction ends, and the
-- delete takes the lock alone: it never deletes a row that a transaction
-- storing a job of its feature counted on.
CREATE TABLE queue_features (
    queue   TEXT NOT NULL,
    feature INTEGER NOT NULL,
    PRIMARY KEY (queue, feature)
);

INSERT INTO queue_features (queue, feature)
    SELECT DISTINCT queue, 1 FROM jobs WHERE priority <> 0
    UNION SELECT DISTINCT queue, 2 FROM jobs WHERE rate_key IS NOT NULL
    UNION SELECT DISTINCT queue, 4 FROM jobs WHERE fair_key IS NOT NULL;

CREATE FUNCTION navree_features() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('navree_features:' || current_schema() || ':' || NEW.queue, 0));
    INSERT INTO queue_features (queue, feature)
        SELECT NEW.queue, v.feature
        FROM (VALUES (1, NEW.priority <> 0), (2, NEW.rate_key IS NOT NULL), (4, NEW.fair_key IS NOT NULL)) AS v(feature, has)
        WHERE v.has AND NOT EXISTS (SELECT 1 FROM queue_features f WHERE f.queue = NEW.queue AND f.feature = v.feature)
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- Its condition keeps it from running for a job without any feature.
CREATE TRIGGER jobs_features AFTER INSERT ON jobs FOR EACH ROW
    WHEN (NEW.priority <> 0 OR NEW.rate_key IS NOT NULL OR NEW.fair_key IS NOT NULL)
    EXECUTE FUNCTION navree_features();
