-- The attempts the workers finished, by queue and minute (the start of
-- the minute, in Unix milliseconds): each worker adds its counts every
-- few seconds, and rows older than a day are deleted as they go.
CREATE TABLE queue_throughput (
    queue     TEXT NOT NULL,
    minute    BIGINT NOT NULL,
    succeeded BIGINT NOT NULL,
    released  BIGINT NOT NULL,  -- failed, and put back for a retry
    failed    BIGINT NOT NULL,  -- failed for good
    PRIMARY KEY (queue, minute)
);
