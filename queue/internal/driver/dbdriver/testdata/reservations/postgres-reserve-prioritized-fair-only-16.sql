WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)),
p AS (SELECT id, priority, fair_seq, available_at
  FROM jobs
  WHERE NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = (SELECT $1::text)
  AND (feature & (SELECT $2::integer)) = 0)
  AND queue = (SELECT $1::text)
  AND reserved_at IS NULL
  AND name = ANY((SELECT $3::text[])::text[])
  AND priority <> 0
  AND priority > 0
  AND available_at <= (SELECT $4::bigint)
  ORDER BY priority DESC, available_at, id
  LIMIT 16
  FOR UPDATE SKIP LOCKED),
u AS (SELECT id, priority, fair_seq, available_at
  FROM jobs
  WHERE NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = (SELECT $1::text)
  AND (feature & (SELECT $2::integer)) = 0)
  AND queue = (SELECT $1::text)
  AND reserved_at IS NULL
  AND name = ANY((SELECT $3::text[])::text[])
  AND priority = 0
  AND fair_seq IS NULL
  AND available_at >= (SELECT $5::bigint)
  AND available_at <= (SELECT $4::bigint)
  ORDER BY available_at, id
  LIMIT (16 - ((SELECT count(*)
  FROM p)))
  FOR UPDATE SKIP LOCKED),
f AS (SELECT id, priority, fair_seq, available_at
  FROM jobs
  WHERE NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = (SELECT $1::text)
  AND (feature & (SELECT $2::integer)) = 0)
  AND queue = (SELECT $1::text)
  AND reserved_at IS NULL
  AND name = ANY((SELECT $3::text[])::text[])
  AND priority = 0
  AND fair_seq IS NOT NULL
  AND fair_seq >= (SELECT $6::bigint)
  AND available_at <= (SELECT $4::bigint)
  ORDER BY fair_seq, available_at, id
  LIMIT (16 - ((SELECT count(*)
  FROM p) + (SELECT count(*)
  FROM u)))
  FOR UPDATE SKIP LOCKED),
n AS (SELECT id, priority, fair_seq, available_at
  FROM jobs
  WHERE NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = (SELECT $1::text)
  AND (feature & (SELECT $2::integer)) = 0)
  AND queue = (SELECT $1::text)
  AND reserved_at IS NULL
  AND name = ANY((SELECT $3::text[])::text[])
  AND priority <> 0
  AND priority < 0
  AND available_at <= (SELECT $4::bigint)
  ORDER BY priority DESC, available_at, id
  LIMIT (16 - ((SELECT count(*)
  FROM p) + (SELECT count(*)
  FROM u) + (SELECT count(*)
  FROM f)))
  FOR UPDATE SKIP LOCKED)
UPDATE jobs SET reserved_at = coalesce($7::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint), reserved_by = $8, attempts = jobs.attempts + 1
  FROM lazy
  WHERE jobs.id = ANY(ARRAY(SELECT id
  FROM p UNION ALL
  SELECT id
  FROM u UNION ALL
  SELECT id
  FROM f UNION ALL
  SELECT id
  FROM n))
  RETURNING jobs.id, jobs.queue, jobs.name, jobs.payload, jobs.max_attempts, jobs.backoff, jobs.timeout_ms, jobs.unique_key, jobs.unique_until, jobs.attempts, jobs.available_at, jobs.reserved_at, jobs.created_at, jobs.last_error, jobs.meta, jobs.flow, jobs.priority, jobs.snoozes, jobs.limit_key, jobs.rate_key, jobs.fair_key, jobs.fair_seq, jobs.controls
