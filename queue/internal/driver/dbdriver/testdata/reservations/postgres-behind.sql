SELECT 1
  FROM jobs
  WHERE queue = (SELECT $1::text)
  AND reserved_at IS NULL
  AND available_at < (SELECT $2::bigint)
  AND available_at <= (SELECT $3::bigint)
  AND fair_seq IS NULL
  LIMIT 1
