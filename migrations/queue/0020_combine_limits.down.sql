ALTER TABLE queue_steps DROP COLUMN limit_max;
ALTER TABLE queue_steps DROP COLUMN limit_key;
DROP INDEX queue_held_unique_key;
