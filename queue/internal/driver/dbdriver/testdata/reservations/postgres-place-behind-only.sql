SELECT 1
  FROM jobs
  WHERE queue = (SELECT $1::text)
  AND reserved_at IS NULL
  AND fair_seq IS NOT NULL
  AND fair_seq < (SELECT $2::bigint)
  AND available_at <= (SELECT $3::bigint)
  AND name = ANY((SELECT $4::text[])::text[])
  LIMIT 1
