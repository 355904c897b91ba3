-- A job with a concurrency limit and a unique key holds its key while it
-- is held, too: a dispatch of the key looks for it in queue_held.
CREATE INDEX queue_held_unique_key ON queue_held (unique_key) WHERE unique_key IS NOT NULL;
