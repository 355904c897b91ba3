SELECT 1
  FROM jobs
  WHERE queue = $1
  AND reserved_at IS NULL
  AND fair_seq IS NOT NULL
  AND fair_seq < $2
  AND available_at <= $3
  AND name = ANY($4::text[])
  LIMIT 1
