ALTER TABLE queue_workers DROP COLUMN rescue_ms;
ALTER TABLE queue_workers DROP COLUMN kind;
ALTER TABLE jobs DROP COLUMN reserved_by;
