WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE jobs SET reserved_at = coalesce($1::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint), reserved_by = $2, attempts = jobs.attempts + 1
  FROM lazy
  WHERE jobs.id = ANY(ARRAY(SELECT id
  FROM jobs
  WHERE NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = (SELECT $3::text)
  AND (feature & (SELECT $4::integer)) = 0)
  AND queue = (SELECT $3::text)
  AND reserved_at IS NULL
  AND fair_seq IS NULL
  AND available_at >= (SELECT $5::bigint)
  AND available_at <= (SELECT $6::bigint)
  AND (rate_key IS NULL OR rate_key NOT IN (SELECT key
  FROM queue_rates
  WHERE reopen_at > coalesce($1::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint)))
  ORDER BY available_at, id
  LIMIT 16
  FOR UPDATE SKIP LOCKED))
  RETURNING jobs.id, jobs.queue, jobs.name, jobs.payload, jobs.max_attempts, jobs.backoff, jobs.timeout_ms, jobs.unique_key, jobs.unique_until, jobs.attempts, jobs.available_at, jobs.reserved_at, jobs.created_at, jobs.last_error, jobs.meta, jobs.flow, jobs.priority, jobs.snoozes, jobs.limit_key, jobs.rate_key, jobs.fair_key, jobs.fair_seq, jobs.controls
