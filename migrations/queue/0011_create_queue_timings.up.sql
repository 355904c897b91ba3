-- How long the attempts ran, and waited before they started, by minute
-- (its start, Unix milliseconds), queue, job type and bucket: half-octaves
-- of microseconds (see driver.Bucket). Each worker adds its counts with
-- its throughput, every few seconds; rows older than a day are deleted as
-- they go. The dashboard's charts read percentiles from them.
CREATE TABLE queue_timings (
    minute BIGINT NOT NULL,
    queue  TEXT NOT NULL,
    name   TEXT NOT NULL,
    wait   INTEGER NOT NULL,  -- 1: the queue wait; 0: the run time
    bucket INTEGER NOT NULL,
    count  BIGINT NOT NULL,
    PRIMARY KEY (minute, queue, name, wait, bucket)
);
