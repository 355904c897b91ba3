UPDATE jobs SET reserved_at = ?1, reserved_by = ?2, attempts = attempts + 1
  WHERE id IN (SELECT id
  FROM (SELECT *
  FROM (SELECT id, priority, available_at
  FROM jobs INDEXED BY jobs_prioritized
  WHERE queue = ?3
  AND reserved_at IS NULL
  AND priority <> 0
  AND available_at <= ?4
  ORDER BY priority DESC, available_at, id
  LIMIT CASE WHEN NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = ?3
  AND (feature & ?5) = 0) THEN +?6 ELSE 0 END) UNION ALL
  SELECT *
  FROM (SELECT id, priority, available_at
  FROM jobs
  WHERE queue = ?3
  AND reserved_at IS NULL
  AND priority = 0
  AND fair_seq IS NULL
  AND available_at >= ?7
  AND available_at <= ?4
  ORDER BY available_at, id
  LIMIT CASE WHEN NOT EXISTS (SELECT 1
  FROM queue_features
  WHERE queue = ?3
  AND (feature & ?5) = 0) THEN +?6 ELSE 0 END))
  ORDER BY priority DESC, available_at, id
  LIMIT +?6)
  RETURNING id, queue, name, payload, max_attempts, backoff, timeout_ms, unique_key, unique_until, attempts, available_at, reserved_at, created_at, last_error, meta, flow, priority, snoozes, limit_key, rate_key, fair_key, fair_seq, controls
