ALTER TABLE queue_workers DROP COLUMN restart_at;
