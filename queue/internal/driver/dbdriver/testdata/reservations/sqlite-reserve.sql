UPDATE jobs SET reserved_at = ?, reserved_by = ?, attempts = attempts + 1
  WHERE id IN (SELECT id
  FROM jobs
  WHERE NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = ?
  AND (feature & ?) = 0)
  AND queue = ?
  AND reserved_at IS NULL
  AND available_at >= ?
  AND available_at <= ?
  ORDER BY available_at, id
  LIMIT +?)
  RETURNING id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, limit_max, rate_key, rate_max, rate_per, fair_key, fair_seq
