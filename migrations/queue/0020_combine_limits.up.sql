-- A job with a concurrency limit and a unique key holds its key while it
-- is held, too: a dispatch of the key looks for it in queue_held.
CREATE INDEX queue_held_unique_key ON queue_held (unique_key) WHERE unique_key IS NOT NULL;

-- A step of a flow may have a concurrency limit: its job is held by it,
-- as a dispatched one is, when the step is released.
ALTER TABLE queue_steps ADD COLUMN limit_key TEXT;
ALTER TABLE queue_steps ADD COLUMN limit_max INTEGER;
