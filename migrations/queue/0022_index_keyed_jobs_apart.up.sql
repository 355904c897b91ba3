-- The waiting jobs with a fairness place leave jobs_waiting for an index
-- of their own in due order, jobs_fair_due, beside jobs_fair (by place).
-- A fair reservation's search of the jobs without a key walked
-- jobs_waiting over every keyed job of its window and found none: 20 ms
-- over 40,000 keyed jobs on SQLite, at every reservation of the first
-- second after a burst. Now it reads only the jobs without a key. Every
-- search by due time names fair_seq IS NULL (a search that does not do
-- fairness takes nothing while a queue holds keyed jobs, so it loses
-- none), and every read of waiting jobs by due time reads both indexes.
--
-- jobs_fair_due's condition names fair_key (every job with a place has
-- one) so that only the reads of waiting jobs, which name it too, can
-- take it: PostgreSQL took it for a fair search by place when its
-- statistics said the table was empty, and sorted every keyed job of the
-- queue at each reservation (330 jobs/s where it works 2,800 by jobs_fair).
--
-- Through a rolling deploy, a worker of the build before this one
-- searches without fair_seq IS NULL, which this index does not serve: its
-- reservations walk the table until it is replaced.
DROP INDEX jobs_waiting;
CREATE INDEX jobs_waiting ON jobs (queue, available_at, id) WHERE reserved_at IS NULL AND fair_seq IS NULL;
CREATE INDEX jobs_fair_due ON jobs (queue, available_at, id) WHERE reserved_at IS NULL AND fair_seq IS NOT NULL AND fair_key IS NOT NULL;
