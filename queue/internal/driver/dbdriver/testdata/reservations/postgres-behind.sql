SELECT 1
  FROM jobs
  WHERE queue = $1
  AND reserved_at IS NULL
  AND available_at < $2
  AND available_at <= $3
  AND fair_seq IS NULL
  LIMIT 1
