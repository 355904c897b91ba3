WITH lazy AS (SELECT set_config('synchronous_commit', 'off', true)) DELETE
  FROM jobs j USING lazy, jsonb_to_recordset($1::jsonb) AS d(id uuid, attempt int)
  WHERE j.id = ANY(ARRAY(SELECT a.id
  FROM jsonb_to_recordset($1::jsonb) AS a(id uuid)))
  AND j.id = d.id
  AND j.attempts = d.attempt
  AND coalesce(j.reserved_at, -1) <> -1
  RETURNING j.id
