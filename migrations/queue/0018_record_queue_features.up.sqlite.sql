-- What a queue's jobs need of its search: a row for each feature that a
-- job in jobs has (1: a priority other than 0, 2: a rate limit, 4: a
-- fairness key), written by the transaction that stores the job, by the
-- trigger below, whichever way the job enters jobs. Every search of a
-- reservation takes nothing while a row names a feature it does not do,
-- so that a worker's belief about a queue can make its search slower,
-- never wrong: it reads the rows and searches again. A worker's prober
-- deletes the row of a feature no job of the queue has any more (in one
-- statement: SQLite's writers take turns).
CREATE TABLE queue_features (
    queue   TEXT NOT NULL,
    feature INTEGER NOT NULL,
    PRIMARY KEY (queue, feature)
) WITHOUT ROWID;

INSERT INTO queue_features (queue, feature)
    SELECT DISTINCT queue, 1 FROM jobs WHERE priority <> 0
    UNION SELECT DISTINCT queue, 2 FROM jobs WHERE rate_key IS NOT NULL
    UNION SELECT DISTINCT queue, 4 FROM jobs WHERE fair_key IS NOT NULL;

-- Its condition keeps it from running for a job without any feature.
CREATE TRIGGER jobs_features AFTER INSERT ON jobs
WHEN NEW.priority <> 0 OR NEW.rate_key IS NOT NULL OR NEW.fair_key IS NOT NULL BEGIN
    INSERT OR IGNORE INTO queue_features (queue, feature)
        SELECT NEW.queue, 1 WHERE NEW.priority <> 0
        UNION ALL SELECT NEW.queue, 2 WHERE NEW.rate_key IS NOT NULL
        UNION ALL SELECT NEW.queue, 4 WHERE NEW.fair_key IS NOT NULL;
END;
