UPDATE jobs SET reserved_at = coalesce($1::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint), reserved_by = $2, attempts = attempts + 1
  WHERE id = (SELECT id
  FROM jobs
  WHERE queue = $3
  AND reserved_at IS NOT NULL
  AND reserved_at <= coalesce($4::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint) - 1000
  AND CASE WHEN reserved_by IS NULL THEN reserved_at + CASE WHEN timeout_ms = 0 THEN 86400000 ELSE timeout_ms + 30000 END <= coalesce($5::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint) ELSE NOT EXISTS (SELECT 1
  FROM queue_workers
  WHERE queue_workers.id = jobs.reserved_by
  AND queue_workers.heartbeat_at + queue_workers.rescue_ms > coalesce($6::bigint, (extract(epoch from statement_timestamp()) * 1000)::bigint)) END
  ORDER BY reserved_at, id
  LIMIT 1
  FOR UPDATE SKIP LOCKED)
  RETURNING id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, rate_key, fair_key, fair_seq, controls
