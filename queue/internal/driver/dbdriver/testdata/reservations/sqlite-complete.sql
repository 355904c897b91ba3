DELETE
  FROM jobs
  WHERE reserved_at IS NOT NULL
  AND (id, attempts) IN (SELECT json_extract(value, '$.id'), json_extract(value, '$.attempt')
  FROM jsonb_each(?))
  RETURNING id
