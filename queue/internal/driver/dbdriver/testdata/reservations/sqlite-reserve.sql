UPDATE jobs SET reserved_at = ?1, reserved_by = ?2, attempts = attempts + 1
  WHERE id IN (SELECT id
  FROM jobs
  WHERE queue = ?3
  AND reserved_at IS NULL
  AND fair_seq IS NULL
  AND available_at >= ?4
  AND available_at <= ?5
  ORDER BY available_at, id
  LIMIT CASE WHEN NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = ?3
  AND (feature & ?6) = 0) THEN +?7 ELSE 0 END)
  RETURNING id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, rate_key, fair_key, fair_seq, controls
