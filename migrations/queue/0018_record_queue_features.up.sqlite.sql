-- What a queue's jobs need of its search: a row for each feature that a
-- job in jobs has (1: a priority other than 0, 2: a rate limit, 4: a
-- fairness key), written by the transaction that stores the job. Every
-- search of a reservation takes nothing while a row names a feature it
-- does not do, so that a worker's belief about a queue can make its
-- search slower, never wrong: it reads the rows and searches again. A
-- worker's prober deletes the row of a feature no job of the queue has
-- any more (in one statement: SQLite's writers take turns).
CREATE TABLE queue_features (
    queue   TEXT NOT NULL,
    feature INTEGER NOT NULL,
    PRIMARY KEY (queue, feature)
) WITHOUT ROWID;

INSERT INTO queue_features (queue, feature)
    SELECT DISTINCT queue, 1 FROM jobs WHERE priority <> 0
    UNION SELECT DISTINCT queue, 2 FROM jobs WHERE rate_key IS NOT NULL
    UNION SELECT DISTINCT queue, 4 FROM jobs WHERE fair_key IS NOT NULL;

-- A dispatch records the features of the jobs it stores itself, in its
-- transaction (a trigger on jobs would run for every job stored, with a
-- feature or not: a bulk dispatch was a tenth slower for it); these
-- record those of the jobs that move into jobs from another table, as
-- that table lets go of them: a retried failed job, a held job let in by
-- its limit, a flow's step released.
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
